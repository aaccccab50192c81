"""The form every recall task shares: a batch, the task's base class, and its one-line checks.

A batch holds ``inputs`` (n, seq_len) int64 tokens and ``targets`` (n, seq_len) int64, equal to
``IGNORE`` everywhere except the labelled positions. A label sits at the position of the token
that asks for it (the query), so a token-level head predicts ``targets[:, t]`` from position t.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

IGNORE = -100  # torch's CrossEntropyLoss ignore_index
SPLITS = ("train", "test")


def check_noise(task: str, noise_vocab_size: int, frac_noise: float, below_one: bool) -> None:
    """The noise options MAD's tasks share: N >= 0 noise tokens, a fraction in [0, 1) (or [0, 1])."""
    require(noise_vocab_size >= 0, f"{task}: noise_vocab_size={noise_vocab_size}: valid range >= 0")
    top, ok = ("frac_noise < 1", frac_noise < 1) if below_one else ("frac_noise <= 1", frac_noise <= 1)
    require(0 <= frac_noise and ok, f"{task}: frac_noise={frac_noise}: valid range 0 <= {top}")
    require(
        frac_noise == 0 or noise_vocab_size > 0,
        f"{task}: frac_noise={frac_noise} needs noise tokens: valid noise_vocab_size >= 1",
    )


@dataclass(frozen=True)
class Batch:
    """inputs: (n, seq_len) int64 tokens; targets: (n, seq_len) int64, IGNORE where unlabelled."""

    inputs: np.ndarray
    targets: np.ndarray

    def __len__(self) -> int:
        return len(self.inputs)


def require(ok: bool, message: str) -> None:
    """Stop with one line when a check fails."""
    if not ok:
        raise ValueError(message)


class RecallTask:
    """A seeded synthetic task, built from its options (a frozen dataclass, ``Options``).

    Class facts each subclass states: ``name`` (the registry's), ``source`` (file and line of the
    definition it follows), ``source_training_set`` ("fixed": the source draws one training set
    and cycles it; "fresh": new samples each step), ``source_loss`` ("labelled": the source's
    training loss counts the labelled positions; "next-token": it counts every next token and
    only its test scores the labelled ones).
    """

    name: ClassVar[str]
    source: ClassVar[str]
    source_training_set: ClassVar[str]
    source_loss: ClassVar[str]
    Options: ClassVar[type]

    def __init__(self, options: object) -> None:
        self.options = options

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.options})"

    @property
    def vocab_size(self) -> int:
        """Number of input token ids, special tokens included: ids are 0..vocab_size-1."""
        raise NotImplementedError

    @property
    def num_classes(self) -> int:
        """Width the token-level head needs: every target id is below it."""
        raise NotImplementedError

    @property
    def seq_len(self) -> int:
        """Length of every example's inputs and targets."""
        raise NotImplementedError

    def _draw(self, rng: np.random.Generator, n: int, split: str) -> Batch:
        raise NotImplementedError

    def sample(self, rng: np.random.Generator, n: int, split: str = "train") -> Batch:
        """n fresh examples from ``rng``; ``split`` matters only where the source's test differs."""
        require(isinstance(n, int) and n >= 1, f"n={n!r} examples: valid range is n >= 1")
        require(split in SPLITS, f"split={split!r}: valid splits are {', '.join(SPLITS)}")
        return self._draw(rng, n, split)

    def fixed(self, seed: int, n: int, split: str = "train") -> Batch:
        """The fixed set of n examples that ``seed`` names (a test set, or a fixed training set)."""
        return self.sample(np.random.default_rng(seed), n, split)


class MaskedAnswerTask(RecallTask):
    """A next-token-form task whose option ``mask_answers`` appends a mask token V to the vocabulary;
    its options state ``data_tokens`` D, the key and value ids below it being the only targets."""

    @property
    def vocab_size(self) -> int:
        return self.options.vocab_size + int(self.options.mask_answers)

    @property
    def num_classes(self) -> int:
        return self.options.data_tokens
