"""Masked-token self-pretraining (docs/pretraining.md; Amos, Berant & Gupta, ICLR 2024): the masking,
the objectives, the task's inputs without their labels, and the LightningModule of the stage.

Each real token is replaced by ``[MASK]`` (id ``vocab_size``: the row the vocabulary grows by) with
probability ``mask_prob``; padding is never masked. The encoder's token states at the masked positions
go through a linear head and are scored against the original tokens, nowhere else (``OBJECTIVES``).
Training masks draw from the global RNG (whose state travels in checkpoints: resume is exact);
validation masks from a generator seeded with the run's seed at every evaluation, so that
``val/pretrain_acc`` measures the same masked positions each time.
"""

from __future__ import annotations

from typing import Any

import lightning as L
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import Dataset
from torchmetrics import SumMetric

import data_prep
from lra.data import LRADataModule
from lra.model.encoder import padding_mask
from lra.model.module import ADAM_BETAS, ADAM_EPS, NonFiniteLossWatch, configured_adamw

PRETRAIN_STEP = "pretrain/step"  # the pretraining stage's step, in each of its rows (its x axis)
MASK_TOKENS = 1  # the vocabulary grows by [MASK], in both stages, so that the weights carry over as they are


def choose_masked(real: torch.Tensor, prob: float, generator: torch.Generator | None = None) -> torch.Tensor:
    """The positions to mask: each real one with probability ``prob``. real (B, N) bool -> (B, N) bool.

    Without ``generator`` the draws come from the global RNG on ``real``'s device; with one (a CPU
    generator) they are drawn on the CPU, the same whatever the device.
    """
    if generator is None:
        draws = torch.rand(real.shape, device=real.device)
    else:
        draws = torch.rand(real.shape, generator=generator).to(real.device)
    return (draws < prob) & real


class TokenClasses(nn.Module):
    """``ce``: a linear map to the task's vocabulary, cross-entropy against the original tokens.

    forward: states (M, dim), targets (M,) long -> (loss summed over M, correct (M,) bool).
    """

    def __init__(self, dim: int, vocab_size: int) -> None:
        super().__init__()
        self.head = nn.Linear(dim, vocab_size)

    def forward(self, states: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits = self.head(states).float()
        return F.cross_entropy(logits, targets, reduction="sum"), logits.argmax(dim=-1) == targets


class GreyLevels(nn.Module):
    """``l1`` (pixel tasks; the authors' Image variant): a linear map to one value, L1 against the grey
    level scaled to [0, 1]; a prediction is right when it rounds to the level.

    forward: states (M, dim), targets (M,) long -> (loss summed over M, correct (M,) bool).
    """

    def __init__(self, dim: int, vocab_size: int) -> None:
        super().__init__()
        self.head = nn.Linear(dim, 1)
        self.top = vocab_size - 1  # the brightest level

    def forward(self, states: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        predicted = self.head(states).float().squeeze(-1)
        loss = F.l1_loss(predicted, targets.float() / self.top, reduction="sum")
        return loss, (predicted * self.top).round() == targets


OBJECTIVES: dict[str, type[nn.Module]] = {"ce": TokenClasses, "l1": GreyLevels}


class ExampleInputs(Dataset):
    """The inputs of a prepared split and never its labels: item i -> (tokens (N,) or, for retrieval,
    both documents (2, N), lengths () or (2,)), int64."""

    def __init__(self, split: data_prep.PreparedSplit) -> None:
        self.split = split

    def __len__(self) -> int:
        return len(self.split.tokens)

    def __getitem__(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        tokens, length = self.split.tokens[index], self.split.lengths[index]
        return tokens.astype(np.int64), np.asarray(length, dtype=np.int64)


def sequences(batch: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """A batch of examples as separate sequences: tokens (B, N) or (B, 2, N) -> (B', N), lengths -> (B',);
    a Retrieval example's two documents are two sequences, so B examples give 2B."""
    tokens, lengths = batch
    return tokens.reshape(-1, tokens.shape[-1]), lengths.reshape(-1)


class PretrainInputs(LRADataModule):
    """The stage's loaders: batches ``(tokens, lengths)`` of the train split's inputs to train on, and of
    the val split's (the test split's when the set has none) to choose the checkpoint on;
    ``batch_size`` counts examples, as fine-tuning's does (a Retrieval batch holds twice as many
    documents, as the authors' pretraining loader)."""

    BATCH_SIZE_KEY = "pretrain.batch_size"

    def training_splits(self, prepared: data_prep.PreparedSet, val_split: str) -> dict[str, Dataset]:
        val = "val" if prepared.counts.get("val") else val_split
        return {"train": ExampleInputs(prepared.split("train")), "val": ExampleInputs(prepared.split(val))}


class MaskedPretrainModule(L.LightningModule):
    """Trains ``encoder`` (tokens (B, N), mask (B, N) -> token states (B, N, dim)) to predict the masked
    tokens of ``(tokens, lengths)`` batches with the objective ``loss`` of ``OBJECTIVES``.

    Logs ``pretrain/loss`` (per masked token), ``pretrain/acc`` (the share of masked tokens predicted
    right) and, at each evaluation, ``val/pretrain_acc`` over the whole split; every row also carries
    ``pretrain/step``, the stage's own step axis. AdamW (``betas``, ``eps``) at ``lr`` under the
    schedule ``schedule`` of ``lra.model.schedules`` (by default a linear warm-up over ``warmup_steps``, then
    constant). A NaN or infinite loss raises ``NonFiniteLossError``.
    """

    def __init__(
        self,
        encoder: nn.Module,
        *,
        dim: int,
        vocab_size: int,
        mask_prob: float,
        loss: str,
        lr: float,
        weight_decay: float,
        warmup_steps: int,
        max_steps: int,
        val_seed: int,
        attention_name: str,
        finite_check_every: int = 50,
        schedule: str = "warmup_constant",
        betas: tuple[float, float] = ADAM_BETAS,
        eps: float = ADAM_EPS,
    ) -> None:
        super().__init__()
        self.encoder = encoder
        self.objective = OBJECTIVES[loss](dim, vocab_size)
        self.mask_id = vocab_size
        self.mask_prob = mask_prob
        self.lr = lr
        self.weight_decay = weight_decay
        self.warmup_steps = warmup_steps
        self.max_steps = max_steps
        self.schedule = schedule
        self.betas = tuple(betas)
        self.eps = eps
        self.val_seed = val_seed
        self.val_masks = torch.Generator()
        self.nonfinite = NonFiniteLossWatch(
            attention_name, finite_check_every, "pretraining loss", "pretrain.lr"
        )
        self.val_correct = SumMetric()
        self.val_masked = SumMetric()

    def score(
        self, tokens: torch.Tensor, real: torch.Tensor, chosen: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The objective at the ``chosen`` positions of ``tokens`` with those replaced by [MASK]:
        (loss summed over them, correct (M,) bool)."""
        states = self.encoder(tokens.masked_fill(chosen, self.mask_id), real)
        return self.objective(states[chosen], tokens[chosen])

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> torch.Tensor:
        tokens, lengths = sequences(batch)
        real = padding_mask(lengths, tokens.shape[1])
        chosen = choose_masked(real, self.mask_prob)
        total, correct = self.score(tokens, real, chosen)
        masked = chosen.sum().clamp(min=1)  # a batch without a masked token scores nothing
        loss = total / masked
        self.nonfinite.observe(loss, self.global_step)
        self.log("pretrain/loss", loss, prog_bar=True)
        self.log("pretrain/acc", correct.sum() / masked, prog_bar=True)
        self.log(PRETRAIN_STEP, float(self.global_step))
        return loss

    def on_validation_epoch_start(self) -> None:
        self.nonfinite.check()
        self.val_masks.manual_seed(self.val_seed)

    def validation_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> None:
        tokens, lengths = sequences(batch)
        real = padding_mask(lengths, tokens.shape[1])
        chosen = choose_masked(real, self.mask_prob, self.val_masks)
        _, correct = self.score(tokens, real, chosen)
        self.val_correct.update(correct.sum())
        self.val_masked.update(chosen.sum())

    def on_validation_epoch_end(self) -> None:
        accuracy = self.val_correct.compute() / self.val_masked.compute().clamp(min=1)
        self.val_correct.reset()
        self.val_masked.reset()
        # Already over every process (the metrics sync): sync_dist averages equal values.
        self.log("val/pretrain_acc", accuracy, prog_bar=True, sync_dist=True)
        self.log(PRETRAIN_STEP, float(self.global_step), sync_dist=True)

    def configure_optimizers(self) -> dict[str, Any]:
        return configured_adamw(self)
