"""The datamodule: a task's prepared set (``data_prep.PreparedSet``), built first if it is missing."""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Iterator
from pathlib import Path

import lightning as L
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, DistributedSampler

import data_prep
from lra.config.errors import ConfigError
from lra.config.records import DataRecord
from lra.data.workers import WorkerLoader, worker_loader

log = logging.getLogger(__name__)


class EpochPermutationSampler(DistributedSampler):
    """Indices 0..size-1 in the permutation of epoch ``e`` drawn from ``(seed, e)`` alone; under DDP, the
    share of process ``rank`` of ``num_replicas`` (``shard``).

    The order of an epoch depends on nothing but the seed and the epoch number (Lightning calls
    ``set_epoch`` at the start of each one), not on how often or when a loader is iterated, so a run
    and any replay of it (a resumed run, the protocol parity tests) see the same batches. A run
    resumed mid-epoch starts its first pass at the index where the interrupted run stopped
    (``resume_at``, from ``lra.job.training_state.TrainingOrderState``): the permutation rotated to start
    there, so that every pass yields ``len(self)`` indices; Lightning ends the resumed epoch after the
    batches the interrupted one had left (it counts them), and the rotated tail is never drawn.

    Process ``rank`` takes every ``num_replicas``-th index from its ``rank``-th, of the permutation padded
    with its own head to a multiple of ``num_replicas`` (as torch's ``DistributedSampler``): the
    processes' batches together take the permutation in order, so a position in it is where all of
    them stand. Being a ``DistributedSampler``, Lightning leaves it in place instead of wrapping it in its
    own, which would shuffle it again and lose that position.
    """

    def __init__(self, size: int, seed: int) -> None:
        super().__init__(range(size), num_replicas=1, rank=0, shuffle=False, seed=seed)
        self.size = size
        self.start = 0  # where the next pass over this epoch begins

    def shard(self, num_replicas: int, rank: int) -> None:
        """Yield process ``rank``'s share of ``num_replicas`` from now on."""
        self.num_replicas, self.rank = num_replicas, rank
        self.num_samples = math.ceil(self.size / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def whole_batches(self, size: int) -> None:
        """Yield each pass the indices of whole batches of ``size`` only (the last incomplete one is
        left out): batches of size/N taken N at a time are then the batches of ``size``."""
        self.num_samples = math.ceil(self.size / self.num_replicas) // size * size

    def set_epoch(self, epoch: int) -> None:
        if epoch != self.epoch:
            self.start = 0
        self.epoch = epoch

    def resume_at(self, epoch: int, index: int) -> None:
        """Begin the next pass at ``index`` of epoch ``epoch``'s permutation (once)."""
        self.epoch, self.start = epoch, index

    def order(self) -> list[int]:
        """The indices of the current epoch, in the order its batches take them."""
        return np.random.default_rng([self.seed, self.epoch]).permutation(self.size).tolist()

    def __iter__(self) -> Iterator[int]:
        order = self.order()
        start, self.start = self.start, 0
        rotated = order[start:] + order[:start]
        padded = rotated + rotated[: self.total_size - self.size]
        return iter(padded[self.rank :: self.num_replicas][: self.num_samples])

    def __len__(self) -> int:
        return self.num_samples


class LRADataModule(L.LightningDataModule):
    """Train / val / test loaders over the prepared set of ``dataset`` under ``root``.

    ``dataset`` names a recipe of ``data_prep.recipes``: ``prepare_data`` builds a missing set when
    the recipe can (the LRA release when unpacked, else a generator) and otherwise stops with the
    commands that prepare it; ``setup`` opens the set the recipe resolves to.

    Batches are ``(tokens (B, L) or (B, 2, L), lengths (B,) or (B, 2), labels (B,))``, all int64.
    Training batches follow ``EpochPermutationSampler`` and drop the last incomplete batch;
    validation and test use the whole split in order. ``val_from_test`` evaluates on the test split
    during training too (LRA's protocol). ``expected`` holds the ``seq_len``, ``vocab_size`` and
    ``num_classes`` the model is built for; ``setup`` checks the prepared set against them.
    ``small_size`` (``debug_data_size``, set by ``debug=fdr``): when the recipe's set is missing, a small
    set of that many training examples is built and used instead (``data_prep.small_sets``).
    ``num_workers`` loader processes serve each loader (``persistent_workers``: for the whole fit, else
    anew at each pass); they leave SIGTERM and SIGINT to this process (``lra.data.workers``).
    """

    BATCH_SIZE_KEY = "task.batch_size"  # the key that sets ``batch_size``, for its error
    ITEMS = "examples"  # what a training batch holds ``batch_size`` of

    def __init__(
        self,
        *,
        root: Path,
        dataset: str,
        batch_size: int,
        expected: dict[str, int],
        dual: bool = False,
        val_from_test: bool = False,
        num_workers: int = 0,
        persistent_workers: bool = True,
        seed: int = 0,
        small_size: int | None = None,
        accumulate: int = 1,
    ) -> None:
        super().__init__()
        self.root = Path(root)
        self.dataset = dataset
        self.batch_size = batch_size
        self.expected = expected
        self.dual = dual
        self.val_from_test = val_from_test
        self.num_workers = num_workers
        self.persistent_workers = persistent_workers
        self.seed = seed
        self.small_size = small_size
        self.accumulate = accumulate
        self.prepare_data_per_node = False  # one process builds a missing set, on a shared file system
        self.splits: dict[str, Dataset] = {}
        self.prepared: data_prep.PreparedSet | None = None
        self.train_sampler: EpochPermutationSampler | None = None

    @classmethod
    def of_record(cls, record: DataRecord) -> LRADataModule:
        """The loaders of a run's ``DataRecord``."""
        return cls(
            root=record.root,
            dataset=record.dataset,
            batch_size=record.batch_size,
            expected={
                "seq_len": record.seq_len,
                "vocab_size": record.vocab_size,
                "num_classes": record.num_classes,
            },
            dual=record.dual,
            val_from_test=record.val_from_test,
            num_workers=record.num_workers,
            persistent_workers=record.persistent_workers,
            seed=record.seed,
            small_size=record.small_size,
            accumulate=record.accumulate,
        )

    def prepare_data(self) -> None:
        if self.small_size is None:
            data_prep.ensure_prepared(self.dataset, self.root)
            return
        shape = data_prep.SetShape(**self.expected, dual=self.dual)
        data_prep.ensure_small(self.dataset, self.root, self.small_size, shape, log)

    def set_name(self) -> str:
        """The prepared set the recipe resolves to (or, with ``small_size``, its small set)."""
        if self.small_size is None:
            return data_prep.resolve(self.dataset, self.root)
        return data_prep.resolve_small(self.dataset, self.root, self.small_size)

    def setup(self, stage: str | None = None) -> None:
        if self.splits:
            return
        prepared = data_prep.PreparedSet(self.set_name(), self.root)
        self.check_shapes(prepared)
        if self.small_size is not None and (line := data_prep.small_set_line(prepared.meta, self.dataset)):
            log.warning(line)
        val_split = "test" if self.val_from_test else "val"
        if not prepared.counts.get(val_split):
            raise ConfigError(
                f"prepared set {prepared.name!r} has no {val_split!r} examples (counts: {prepared.counts}); "
                "set task.val_from_test=true to validate on the test split"
            )
        splits = self.training_splits(prepared, val_split)
        train_size = len(splits["train"])
        if self.batch_size * self.accumulate > train_size:
            per_step = f" x trainer.accumulate_grad_batches={self.accumulate}" if self.accumulate > 1 else ""
            raise ConfigError(
                f"{self.BATCH_SIZE_KEY}={self.batch_size}{per_step} is larger than the training split of "
                f"{prepared.name!r} ({train_size} {self.ITEMS})"
            )
        self.splits, self.prepared = splits, prepared
        self.train_sampler = EpochPermutationSampler(train_size, self.seed)

    def training_splits(self, prepared: data_prep.PreparedSet, val_split: str) -> dict[str, Dataset]:
        """The datasets of the loaders by name (``train``, ``val``, ``test``); ``val_split``: the
        prepared split that validates (``val``, or ``test`` with ``val_from_test``)."""
        return {
            name: prepared.split(split)
            for name, split in (("train", "train"), ("val", val_split), ("test", "test"))
        }

    def description(self) -> dict | None:
        """What summary.json records of the prepared set (None before ``setup``): the recipe, the set it
        resolved to, its source, generator/split seed, the command that rebuilds it and each split's
        majority-class share."""
        if self.prepared is None:
            return None
        meta = self.prepared.meta
        return {
            "dataset": self.dataset,
            "set": self.prepared.name,
            "source": meta.get("source"),
            "seed": meta.get("seed"),
            "command": meta.get("command"),
            "majority_share": self.prepared.majority_share,
        }

    def check_shapes(self, prepared: data_prep.PreparedSet) -> None:
        """The prepared set must match what the model is built for (sequence length, vocabulary, classes)."""
        where = prepared.directory / "meta.json"
        for key, expected in self.expected.items():
            found = prepared.meta[key]
            if found != expected:
                again = "prepare the set again"
                command = prepared.meta.get("command")
                if key == "seq_len" and command:  # the command that made it, at the task's length
                    again += ": " + re.sub(r" --seq-len \S+", "", command) + f" --seq-len {expected}"
                raise ConfigError(
                    f"task.{key}={expected} but the prepared set {prepared.name!r} has {key}={found} "
                    f"({where}); set task.{key}={found} or {again}"
                )
        if prepared.dual != self.dual:
            raise ConfigError(
                f"task.dual={self.dual} but the prepared set {prepared.name!r} holds "
                f"{'two documents' if prepared.dual else 'one sequence'} per example ({where})"
            )

    def loader(self, name: str) -> WorkerLoader:
        train = name == "train"
        if train and self.trainer is not None:  # under DDP, this process's share of each epoch
            self.train_sampler.shard(self.trainer.world_size, self.trainer.global_rank)
        if train:  # whole optimizer steps only: N batches of B/N are the batches of B, in order
            self.train_sampler.whole_batches(self.batch_size * self.accumulate)
        return worker_loader(
            self.splits[name],
            batch_size=self.batch_size,
            sampler=self.train_sampler if train else None,
            drop_last=train,
            # worker seeds from the loader's own generator: creating an iterator leaves the global RNG
            # (dropout, random features) alone, so a resumed run draws what an uninterrupted one does
            generator=torch.Generator().manual_seed(self.seed),
            num_workers=self.num_workers,
            persistent_workers=self.persistent_workers and self.num_workers > 0,
            pin_memory=torch.cuda.is_available(),
        )

    def train_dataloader(self) -> DataLoader:
        return self.loader("train")

    def val_dataloader(self) -> DataLoader:
        return self.loader("val")

    def test_dataloader(self) -> DataLoader:
        return self.loader("test")
