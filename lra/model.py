"""The shared LRA encoder (docs/design.md § The encoder): one small Transformer for every task × attention.

Token embedding + learned absolute position embedding, both drawn from N(0, 0.02²) as in both
papers' code; ``depth`` pre-LayerNorm blocks (multi-head self-attention around a zoo core, then a
GELU feed-forward); a final LayerNorm (the ``Encoder``'s token states, which self-pretraining
predicts masked tokens from); mean pooling over the real tokens; an MLP classifier. Retrieval
(``dual=True``) encodes both documents with the same encoder and classifies ``[u, v, u*v, u-v]``.

The attention is a factory that the encoder calls once per layer with the shapes it knows,
``attention(dim=dim, head_dim=dim // num_heads, num_heads=num_heads, seq_len=seq_len)``, e.g.
``functools.partial(attention_zoo.build_attention, "nystrom", num_landmarks=64)``. It returns a core,
which the block wraps in ``MultiHeadSelfAttention``, or a mixer (``attention_zoo.is_mixer``), which
takes that wrapper's place as it is.
"""

from __future__ import annotations

from typing import Protocol

import torch
from torch import nn

from attention_zoo import MultiHeadSelfAttention, is_mixer, tie_layers

EMBEDDING_INIT_STD = 0.02  # the Skyformer and Nyströmformer authors' initialisation of both embeddings


def padding_mask(lengths: torch.Tensor, seq_len: int) -> torch.Tensor:
    """True at real positions: lengths (B,) -> (B, seq_len) bool, position < length.

    Pixel tasks store every length as the full image, so a black pixel (token 0) is a real token.
    """
    return torch.arange(seq_len, device=lengths.device)[None, :] < lengths[:, None]


class AttentionFactory(Protocol):
    """Builds a layer's attention core or mixer from its shapes (``attention_zoo.build_attention``)."""

    def __call__(self, *, dim: int, head_dim: int, num_heads: int, seq_len: int) -> nn.Module: ...


class EncoderBlock(nn.Module):
    """Pre-LayerNorm Transformer block: (B, N, dim), mask (B, N) -> (B, N, dim). ``attention`` mixes the
    tokens: ``core`` in a ``MultiHeadSelfAttention``, or ``core`` itself when it is a mixer."""

    def __init__(self, dim: int, num_heads: int, ffn_dim: int, dropout: float, core: nn.Module) -> None:
        super().__init__()
        self.attention_norm = nn.LayerNorm(dim)
        self.attention = core if is_mixer(core) else MultiHeadSelfAttention(dim, num_heads, core, dropout)
        self.ffn_norm = nn.LayerNorm(dim)
        self.ffn = nn.Sequential(
            nn.Linear(dim, ffn_dim),
            nn.GELU(),
            nn.Dropout(dropout),
            nn.Linear(ffn_dim, dim),
            nn.Dropout(dropout),
        )

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.attention_norm(x), mask)
        return x + self.ffn(self.ffn_norm(x))


def mean_pool(states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The mean of the token states over the real positions: (B, N, dim), mask (B, N) -> (B, dim)."""
    weights = mask.to(states.dtype)[..., None]  # (B, N, 1)
    return (states * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1.0)


class Encoder(nn.Module):
    """Tokens to their states after the final LayerNorm: tokens (B, N), mask (B, N) bool -> (B, N, dim)."""

    def __init__(
        self,
        *,
        vocab_size: int,
        seq_len: int,
        attention: AttentionFactory,
        dim: int,
        depth: int,
        num_heads: int,
        ffn_dim: int,
        dropout: float,
    ) -> None:
        super().__init__()
        if dim % num_heads:
            raise ValueError(f"model.dim={dim} must be a multiple of model.num_heads={num_heads}")
        self.token_embedding = nn.Embedding(vocab_size, dim)
        self.position_embedding = nn.Embedding(seq_len, dim)
        for embedding in (self.token_embedding, self.position_embedding):
            nn.init.normal_(embedding.weight, std=EMBEDDING_INIT_STD)
        self.dropout = nn.Dropout(dropout)
        shapes = {"dim": dim, "head_dim": dim // num_heads, "num_heads": num_heads, "seq_len": seq_len}
        self.blocks = nn.ModuleList(
            EncoderBlock(dim, num_heads, ffn_dim, dropout, attention(**shapes)) for _ in range(depth)
        )
        cores = [getattr(block.attention, "core", block.attention) for block in self.blocks]
        tie_layers(cores)  # cross-layer sharing options
        self.norm = nn.LayerNorm(dim)

    def forward(self, tokens: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.dropout(self.token_embedding(tokens) + self.position_embedding(positions)[None])
        for block in self.blocks:
            x = block(x, mask)
        return self.norm(x)


class LRAClassifier(nn.Module):
    """The LRA classifier. forward(tokens, lengths) -> logits (B, num_classes).

    tokens: (B, L) long, or (B, 2, L) when ``dual`` (retrieval: two documents per example);
    lengths: (B,) or (B, 2), the number of real tokens (the mask is ``position < length``).
    ``attention`` builds a fresh attention core for each layer from the shapes the encoder passes
    (see the module docstring).
    """

    def __init__(
        self,
        *,
        vocab_size: int,
        num_classes: int,
        seq_len: int,
        attention: AttentionFactory,
        dim: int = 64,
        depth: int = 2,
        num_heads: int = 2,
        ffn_dim: int = 128,
        dropout: float = 0.1,
        dual: bool = False,
        classifier_dim: int = 128,
    ) -> None:
        super().__init__()
        self.seq_len = seq_len
        self.dual = dual
        self.encoder = Encoder(
            vocab_size=vocab_size,
            seq_len=seq_len,
            attention=attention,
            dim=dim,
            depth=depth,
            num_heads=num_heads,
            ffn_dim=ffn_dim,
            dropout=dropout,
        )
        features = 4 * dim if dual else dim
        self.classifier = nn.Sequential(
            nn.Linear(features, classifier_dim), nn.ReLU(), nn.Linear(classifier_dim, num_classes)
        )

    def forward(self, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        expected_dims = 3 if self.dual else 2
        if tokens.dim() != expected_dims or tokens.shape[-1] > self.seq_len:
            layout = "(batch, 2, seq)" if self.dual else "(batch, seq)"
            raise ValueError(f"tokens must be {layout} with seq <= {self.seq_len}, got {tuple(tokens.shape)}")
        seq = tokens.shape[-1]
        if not self.dual:
            return self.classifier(self.pooled(tokens, padding_mask(lengths, seq)))
        batch = tokens.shape[0]
        pooled = self.pooled(tokens.reshape(2 * batch, seq), padding_mask(lengths.reshape(2 * batch), seq))
        u, v = pooled.view(batch, 2, -1).unbind(dim=1)
        return self.classifier(torch.cat([u, v, u * v, u - v], dim=-1))

    def pooled(self, tokens: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """One vector per sequence: tokens (B, N), mask (B, N) -> (B, dim)."""
        return mean_pool(self.encoder(tokens, mask), mask)
