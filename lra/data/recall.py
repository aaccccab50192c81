"""The datamodule of a generated recall task (``task.generator``, ``data_prep.recall``): a fixed
training set and a fixed test set, each drawn from the run's seed on its own stream.

Every source trains on a fixed set that it cycles in epochs (``RecallTask.source_training_set``,
data_prep/recall/README.md), so training does too; validation and test read the test set, as the
sources evaluate on it during training. Batches are ``(tokens (B, L), lengths (B,), targets (B, L))``,
int64: every position is real, and targets are ``IGNORE`` except at the labelled positions.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch.utils.data import TensorDataset

from data_prep.recall import IGNORE, RecallTask, build
from lra.config.errors import ConfigError
from lra.config.records import DataRecord, RecallRecord
from lra.data.prepared import EpochPermutationSampler, LRADataModule

__all__ = ["IGNORE", "RecallDataModule"]

STREAMS = {"train": 0, "test": 1}  # each split's draw: numpy's default_rng([seed, stream])
SHAPES = ("seq_len", "vocab_size", "num_classes")  # what the model is built for, from the generator


def recall_task(generator: dict[str, Any]) -> RecallTask:
    """The task of a ``task.generator`` node (``name`` and options); a ``ConfigError`` line naming the
    bad option and what is valid (an option of another task, pairs that do not fit the length, a
    vocabulary too small for the keys and values)."""
    options = dict(generator)
    try:
        return build(options.pop("name", None), **options)
    except ValueError as error:
        raise ConfigError(f"task.generator: {error}") from None


def drawn_split(task: RecallTask, seed: int, split: str, size: int) -> TensorDataset:
    """``size`` examples of ``split`` drawn from ``seed``: tokens (n, L), lengths (n,), targets (n, L)."""
    batch = task.sample(np.random.default_rng([seed, STREAMS[split]]), size, split)
    tokens, targets = torch.from_numpy(batch.inputs), torch.from_numpy(batch.targets)  # (n, L) each
    return TensorDataset(tokens, torch.full((size,), task.seq_len), targets)


class RecallDataModule(LRADataModule):
    """Train / val / test loaders over a recall task's fixed sets (module docstring); the training
    order follows ``EpochPermutationSampler``, so a resumed run sees the batches an uninterrupted one
    does."""

    def __init__(self, *, recall: RecallRecord, batch_size: int, num_workers: int = 0, seed: int = 0) -> None:
        super().__init__(
            root=".",
            dataset=recall.generator,
            batch_size=batch_size,
            expected={},
            val_from_test=True,
            num_workers=num_workers,
            seed=seed,
        )
        self.recall = recall
        self.task: RecallTask | None = None

    @classmethod
    def of_record(cls, record: DataRecord) -> RecallDataModule:
        batch, workers = record.batch_size, record.num_workers
        return cls(recall=record.recall, batch_size=batch, num_workers=workers, seed=record.seed)

    def prepare_data(self) -> None:
        """Nothing to prepare: ``setup`` draws the sets."""

    def setup(self, stage: str | None = None) -> None:
        if self.splits:
            return
        recall = self.recall
        if self.batch_size > recall.train_examples:
            raise ConfigError(
                f"{self.BATCH_SIZE_KEY}={self.batch_size} is larger than "
                f"task.train_examples={recall.train_examples}"
            )
        task = recall_task({"name": recall.generator, **recall.options})
        test = drawn_split(task, self.seed, "test", recall.test_examples)
        self.splits = {
            "train": drawn_split(task, self.seed, "train", recall.train_examples),
            "val": test,
            "test": test,
        }
        self.task = task
        self.train_sampler = EpochPermutationSampler(recall.train_examples, self.seed)

    def description(self) -> dict | None:
        """What summary.json records of the data (after ``setup``): the generator, its options and the
        seed each set is drawn from."""
        if self.task is None:
            return None
        return {
            "dataset": self.dataset,
            "set": self.dataset,
            "source": "recall generator",
            "seed": self.seed,
            "command": None,
            "majority_share": None,
            "generator": {"name": self.recall.generator, **self.recall.options},
        }
