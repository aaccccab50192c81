"""The datamodule of a generated recall task (``task.generator``, ``data_prep.recall``): a training set,
fixed or fresh, and a fixed test set, each drawn from the run's seed on its own stream.

Every source trains on a fixed set that it cycles in epochs (``RecallTask.source_training_set``,
data_prep/recall/README.md), and so does ``task.training_set=fixed``. ``fresh`` draws new examples for
every batch (the CPU tier's cell, ``experiment=diagnostics_cpu``): a batch is drawn from the seed and
the number of its first example (``FreshExamples``, ``FreshOrder``), so a resumed run sees the batches
an uninterrupted one does. Validation and test read the test set, as the sources evaluate on it during
training. Batches are ``(tokens (B, L), lengths (B,), targets (B, L))``, int64: every position is real,
and targets are ``IGNORE`` except at the labelled positions.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset, TensorDataset

from data_prep.recall import IGNORE, RecallTask, build
from lra.config.errors import ConfigError
from lra.config.records import DataRecord, RecallRecord
from lra.data.prepared import EpochPermutationSampler, LRADataModule

__all__ = ["IGNORE", "RecallDataModule"]

STREAMS = {"train": 0, "test": 1, "fresh": 2}  # each draw: numpy's default_rng([seed, stream, ...])
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


class FreshExamples(Dataset):
    """Training examples drawn anew for each batch: the batch of example numbers ``numbers`` is
    ``len(numbers)`` examples drawn from ``(seed, fresh stream, numbers[0])``; ``size``: an epoch's."""

    def __init__(self, task: RecallTask, seed: int, size: int) -> None:
        self.task, self.seed, self.size = task, seed, size

    def __len__(self) -> int:
        return self.size

    def __getitems__(self, numbers: list[int]) -> list[tuple[torch.Tensor, ...]]:
        """The examples of one batch, as (tokens (L,), length, targets (L,)) each, for the collate."""
        rng = np.random.default_rng([self.seed, STREAMS["fresh"], numbers[0]])
        batch = self.task.sample(rng, len(numbers), "train")
        tokens, targets = torch.from_numpy(batch.inputs), torch.from_numpy(batch.targets)  # (B, L) each
        return list(zip(tokens, torch.full((len(numbers),), self.task.seq_len), targets, strict=True))

    def __getitem__(self, number: int) -> tuple[torch.Tensor, ...]:
        return self.__getitems__([number])[0]


class FreshOrder(EpochPermutationSampler):
    """The example numbers of epoch e, ``e * size`` to ``(e + 1) * size - 1`` in order: no two batches of
    a run share a first number, so none draws the examples of another (``FreshExamples``)."""

    def order(self) -> list[int]:
        return list(range(self.epoch * self.size, (self.epoch + 1) * self.size))


class RecallDataModule(LRADataModule):
    """Train / val / test loaders over a recall task's sets (module docstring); the training order
    follows ``EpochPermutationSampler`` (fixed) or ``FreshOrder`` (fresh), so a resumed run sees the
    batches an uninterrupted one does."""

    def __init__(
        self,
        *,
        recall: RecallRecord,
        batch_size: int,
        num_workers: int = 0,
        persistent_workers: bool = True,
        seed: int = 0,
    ) -> None:
        super().__init__(
            root=".",
            dataset=recall.generator,
            batch_size=batch_size,
            expected={},
            val_from_test=True,
            num_workers=num_workers,
            persistent_workers=persistent_workers,
            seed=seed,
        )
        self.recall = recall
        self.task: RecallTask | None = None

    @classmethod
    def of_record(cls, record: DataRecord) -> RecallDataModule:
        return cls(
            recall=record.recall,
            batch_size=record.batch_size,
            num_workers=record.num_workers,
            persistent_workers=record.persistent_workers,
            seed=record.seed,
        )

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
        size = recall.train_examples
        if recall.training_set == "fresh":
            train, self.train_sampler = FreshExamples(task, self.seed, size), FreshOrder(size, self.seed)
        else:
            train, self.train_sampler = (
                drawn_split(task, self.seed, "train", size),
                EpochPermutationSampler(size, self.seed),
            )
        self.splits = {"train": train, "val": test, "test": test}
        self.task = task

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
            "training_set": self.recall.training_set,
        }
