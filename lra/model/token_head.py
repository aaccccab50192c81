"""The token-level head of the recall tasks: the shared encoder (``lra.model.encoder.Encoder``) with a
prediction at every position, where the sequence heads of ``LRAClassifier`` pool one vector per
example. A recall task's label sits at the position of the query that asks for it
(``data_prep.recall``), so the head reads the encoder's state there; the LightningModule counts only
the labelled positions.
"""

from __future__ import annotations

import torch
from torch import nn

from lra.model.encoder import Encoder, padding_mask


class TokenClassifier(nn.Module):
    """forward(tokens (B, N), lengths (B,)) -> logits (B, N, num_classes): a linear layer on every
    position's state after the encoder's final norm (a CLS token, when there is one, predicts nothing).
    ``encoder_options`` go to ``Encoder``: the vocabulary, the attention factory and the model's options
    (``causal`` among them)."""

    def __init__(
        self, *, num_classes: int, seq_len: int, dim: int, dual: bool = False, **encoder_options
    ) -> None:
        super().__init__()
        if dual:
            raise ValueError("task.dual=true: the token head reads one sequence an example")
        self.seq_len = seq_len
        self.encoder = Encoder(seq_len=seq_len, dim=dim, **encoder_options)
        self.classifier = nn.Linear(dim, num_classes)

    def forward(self, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        if tokens.dim() != 2 or tokens.shape[-1] > self.seq_len:
            raise ValueError(
                f"tokens must be (batch, seq) with seq <= {self.seq_len}, got {tuple(tokens.shape)}"
            )
        states = self.encoder(tokens, padding_mask(lengths, tokens.shape[1]))  # (B, N, dim)
        return self.classifier(states)  # (B, N, num_classes)
