"""The datamodule: prepared, memory-mapped splits (``data_prep.load``) as (tokens, lengths, labels)."""

from __future__ import annotations

import logging
import shlex
from collections.abc import Sequence
from pathlib import Path

import lightning as L
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

import data_prep
from data_prep.commands import main as data_prep_main
from data_prep.storage import DataNotPreparedError
from lra.errors import ConfigError

log = logging.getLogger(__name__)


class TokenDataset(Dataset):
    """Items ``(tokens, length, label)`` of one prepared split.

    tokens: (L,) or (2, L) int64; length: () or (2,) int64; label: () int64. It pickles as the
    split's name and reopens the memory maps where it lands, so a DataLoader worker started with
    ``spawn`` (macOS, Windows) never receives a copy of the arrays.
    """

    def __init__(self, split: data_prep.PreparedSplit) -> None:
        self.split = split

    def __reduce__(self):
        directory = self.split.directory
        return reopen_split, (directory.name, self.split.split, directory.parent)

    def __len__(self) -> int:
        return len(self.split)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        tokens = torch.from_numpy(np.asarray(self.split.tokens[index], dtype=np.int64))
        length = torch.from_numpy(np.asarray(self.split.lengths[index], dtype=np.int64))
        return tokens, length, torch.tensor(int(self.split.labels[index]))


def reopen_split(name: str, split: str, root: Path) -> TokenDataset:
    """A ``TokenDataset`` over an already verified prepared split."""
    return TokenDataset(data_prep.load(name, split, root, verify=False))


def choose_prepare_command(alternatives: Sequence[Sequence[str]]) -> list[str] | None:
    """The first alternative whose ``--source`` path exists (one without ``--source`` always qualifies)."""
    for args in alternatives:
        args = [str(arg) for arg in args]
        if "--source" not in args or Path(args[args.index("--source") + 1]).exists():
            return args
    return None


def prepare_set(dataset: str, root: Path, prepare: Sequence[Sequence[str]] | None) -> None:
    """Build the prepared set ``dataset`` under ``root`` if it is missing.

    ``prepare`` lists alternative ``python -m data_prep`` argument lists (e.g. the LRA release when
    it is unpacked, else the built-in generator); the first that applies runs. None, or no
    applicable alternative, means the set needs a download: the ``DataNotPreparedError`` that
    names the command is raised unchanged.
    """
    try:
        data_prep.read_meta(dataset, root)
        return
    except DataNotPreparedError:
        args = None if prepare is None else choose_prepare_command(prepare)
        if args is None:
            raise
    argv = [*args, "--root", str(root)]
    log.info(
        "Prepared set %r not found under %s: building it with `python -m data_prep %s`",
        dataset,
        root,
        shlex.join(argv),
    )
    if data_prep_main(argv) != 0:
        raise DataNotPreparedError(f"`python -m data_prep {shlex.join(argv)}` failed (see its message above)")
    data_prep.read_meta(dataset, root)  # the command must have produced the set the task names


class LRADataModule(L.LightningDataModule):
    """Train / val / test loaders over the prepared set ``dataset`` under ``root``.

    Batches are ``(tokens (B, L) or (B, 2, L), lengths (B,) or (B, 2), labels (B,))``, all int64.
    Training batches are shuffled with a seeded generator and drop the last incomplete batch;
    validation and test use the whole split in order. ``val_from_test`` evaluates on the test split
    during training too (LRA's protocol). ``expected`` holds the ``seq_len``, ``vocab_size`` and
    ``num_classes`` the model is built for; ``setup`` checks the prepared set against them.
    """

    def __init__(
        self,
        *,
        root: Path,
        dataset: str,
        prepare: Sequence[Sequence[str]] | None,
        batch_size: int,
        expected: dict[str, int],
        dual: bool = False,
        val_from_test: bool = False,
        num_workers: int = 0,
        seed: int = 0,
    ) -> None:
        super().__init__()
        self.root = Path(root)
        self.dataset = dataset
        self.prepare = prepare
        self.batch_size = batch_size
        self.expected = expected
        self.dual = dual
        self.val_from_test = val_from_test
        self.num_workers = num_workers
        self.seed = seed
        self.prepare_data_per_node = False  # one process builds a missing set, on a shared file system
        self.splits: dict[str, TokenDataset] = {}
        self.meta: dict = {}

    def prepare_data(self) -> None:
        prepare_set(self.dataset, self.root, self.prepare)

    def setup(self, stage: str | None = None) -> None:
        if self.splits:
            return
        meta = data_prep.read_meta(self.dataset, self.root)
        self.check_meta(meta)
        self.meta = meta
        val_split = "test" if self.val_from_test else "val"
        if not meta["counts"].get(val_split):
            raise ConfigError(
                f"prepared set {self.dataset!r} has no {val_split!r} examples (counts: {meta['counts']}); "
                "set task.val_from_test=true to validate on the test split"
            )
        for name, split in (("train", "train"), ("val", val_split), ("test", "test")):
            self.splits[name] = TokenDataset(data_prep.load(self.dataset, split, self.root))
        train_size = len(self.splits["train"])
        if self.batch_size > train_size:
            raise ConfigError(
                f"task.batch_size={self.batch_size} is larger than the training split of "
                f"{self.dataset!r} ({train_size} examples)"
            )

    def description(self) -> dict:
        """What summary.json records of the prepared set (after ``setup``): name, seed, rebuild command."""
        return {"dataset": self.dataset, "seed": self.meta.get("seed"), "command": self.meta.get("command")}

    def check_meta(self, meta: dict) -> None:
        """The prepared set must match what the model is built for (sequence length, vocabulary, classes)."""
        where = self.root / self.dataset / "meta.json"
        for key, expected in self.expected.items():
            if meta[key] != expected:
                raise ConfigError(
                    f"task.{key}={expected} but the prepared set {self.dataset!r} has {key}={meta[key]} "
                    f"({where}); set task.{key}={meta[key]} or prepare the set again"
                )
        dual = len(meta["files"]["train.tokens.npy"]["shape"]) == 3
        if dual != self.dual:
            raise ConfigError(
                f"task.dual={self.dual} but the prepared set {self.dataset!r} holds "
                f"{'two documents' if dual else 'one sequence'} per example ({where})"
            )

    def loader(self, name: str) -> DataLoader:
        train = name == "train"
        return DataLoader(
            self.splits[name],
            batch_size=self.batch_size,
            shuffle=train,
            drop_last=train,
            generator=torch.Generator().manual_seed(self.seed) if train else None,
            num_workers=self.num_workers,
            persistent_workers=self.num_workers > 0,
            pin_memory=torch.cuda.is_available(),
        )

    def train_dataloader(self) -> DataLoader:
        return self.loader("train")

    def val_dataloader(self) -> DataLoader:
        return self.loader("val")

    def test_dataloader(self) -> DataLoader:
        return self.loader("test")
