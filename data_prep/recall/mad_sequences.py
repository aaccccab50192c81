"""MAD's selective copying, compression and memorization.

Sources: athms/mad-lab ``mad/data/instances.py``: ``generate_copying_instance`` with
``selective=True`` (L514-567, L572-600), ``generate_compression_instance`` (L464-509),
``generate_memorization_instance`` and ``generate_kv_map`` (L352-459); defaults: the baselines
of ``configs/tasks/{selective-copying,compression,memorization}.yml`` over ``MADConfig``.
MAD draws a fixed training set of each (``MemoryDataset``, ``mad/data/dataset.py`` L129-248), and
these three have the same targets in training and test.

Selective copying (V = ``vocab_size``, S = ``seq_len``, C = ``num_tokens_to_copy``): C tokens
uniform over [0, V-2), with S - 2C - 1 blanks (V-2) spread among them, each blank going before
token j for j uniform over 0..C-1 (so the last token to copy is always right before the copy
token; the source draws these places from numpy's global generator, here from the task's),
then the copy token V-1 and C blanks, whose positions carry the C tokens as labels. As source.

Compression: MAD's input is S-1 tokens uniform over [0, V-1-N) and a compression token V-1;
an auto-encoder (``mad/model/auto_encoder.py``) pools the last position into one vector and an
MLP decodes all S tokens from it and a position embedding. A token-level head has no such
decoder, so here the input goes on with S blanks (token V, appended to the vocabulary) whose
positions carry the S tokens to rebuild: the same targets, asked of the same model after the
compression token. The only bottleneck is then the state a mixer carries past that token:
attention can copy instead. Noise (``frac_noise``, tokens [V-1-N, V-1)) replaces inputs and,
as the source's returned targets do, is rebuilt too (the source's per-token ignore mask is
computed but not returned).

Memorization: a fixed map, made once per task from ``kv_map_seed``, sends each key of
[0, D//2) to a distinct value of [D//2, D), D = V - 1 - N; an example is S//2 pairs ``k I``
(k uniform, I = V-1 the insert token) whose I positions carry k's value; with ``frac_noise``,
a pair is two noise tokens instead (one pair never is). As source; the map is a random
one-to-one pairing as MAD's, not MAD's own permutation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from data_prep.recall.base import IGNORE, Batch, RecallTask, check_noise, require


@dataclass(frozen=True)
class SelectiveCopyingOptions:
    """MAD's selective-copying baseline: vocabulary 16, length 256, 16 tokens to copy."""

    vocab_size: int = 16
    seq_len: int = 256
    num_tokens_to_copy: int = 16

    def __post_init__(self) -> None:
        task, count = "selective_copying", self.num_tokens_to_copy
        require(self.vocab_size >= 3, f"{task}: vocab_size={self.vocab_size}: valid range >= 3")
        most = (self.seq_len - 2) // 2
        require(
            1 <= count <= most,
            f"{task}: num_tokens_to_copy={count} does not fit seq_len={self.seq_len}: valid range 1..{most}",
        )


class SelectiveCopying(RecallTask):
    """Vocabulary V (with the blank V-2 and the copy token V-1); classes V - 2."""

    name: ClassVar[str] = "selective_copying"
    source: ClassVar[str] = "athms/mad-lab mad/data/instances.py L514-600"
    source_training_set: ClassVar[str] = "fixed"
    source_loss: ClassVar[str] = "labelled"
    Options: ClassVar[type] = SelectiveCopyingOptions
    options: SelectiveCopyingOptions

    @property
    def vocab_size(self) -> int:
        return self.options.vocab_size

    @property
    def num_classes(self) -> int:
        return self.options.vocab_size - 2

    @property
    def seq_len(self) -> int:
        return self.options.seq_len

    def _draw(self, rng: np.random.Generator, n: int, split: str) -> Batch:
        vocab, length, count = self.options.vocab_size, self.options.seq_len, self.options.num_tokens_to_copy
        blanks = length - 2 * count - 1
        to_copy = rng.integers(0, vocab - 2, size=(n, count))  # (n, C)
        places = rng.integers(0, count, size=(n, blanks)) + count * np.arange(n)[:, None]
        before = np.bincount(places.ravel(), minlength=n * count).reshape(n, count)  # blanks before j
        positions = np.cumsum(before, axis=1) + np.arange(count)  # (n, C)
        inputs = np.full((n, length), vocab - 2, np.int64)
        np.put_along_axis(inputs, positions, to_copy, axis=1)
        inputs[:, length - count - 1] = vocab - 1
        targets = np.full((n, length), IGNORE, np.int64)
        targets[:, length - count :] = to_copy
        return Batch(inputs, targets)


@dataclass(frozen=True)
class CompressionOptions:
    """MAD's compression baseline: vocabulary 16, length 32, no noise."""

    vocab_size: int = 16
    seq_len: int = 32
    noise_vocab_size: int = 0
    frac_noise: float = 0.0

    def __post_init__(self) -> None:
        task = "compression"
        require(self.seq_len >= 2, f"{task}: seq_len={self.seq_len}: valid range >= 2")
        check_noise(task, self.noise_vocab_size, self.frac_noise, below_one=False)
        require(
            self.vocab_size >= 2 + self.noise_vocab_size,
            f"{task}: vocab_size={self.vocab_size} is too small for tokens, {self.noise_vocab_size} noise"
            f" tokens and the compression token: valid range >= {2 + self.noise_vocab_size}",
        )


class Compression(RecallTask):
    """Inputs and targets (n, 2 * seq_len); vocabulary V + 1 (blank V), classes V."""

    name: ClassVar[str] = "compression"
    source: ClassVar[str] = "athms/mad-lab mad/data/instances.py L464-509"
    source_training_set: ClassVar[str] = "fixed"
    source_loss: ClassVar[str] = "labelled"
    Options: ClassVar[type] = CompressionOptions
    options: CompressionOptions

    @property
    def vocab_size(self) -> int:
        return self.options.vocab_size + 1

    @property
    def num_classes(self) -> int:
        return self.options.vocab_size

    @property
    def seq_len(self) -> int:
        return 2 * self.options.seq_len

    def _draw(self, rng: np.random.Generator, n: int, split: str) -> Batch:
        o = self.options
        data = o.vocab_size - 1 - o.noise_vocab_size
        source = np.full((n, o.seq_len), o.vocab_size - 1, np.int64)  # (n, S) ends in the compression token
        source[:, :-1] = rng.integers(0, data, size=(n, o.seq_len - 1))
        noisy = rng.random((n, o.seq_len - 1)) < o.frac_noise
        noise = rng.integers(data, data + max(o.noise_vocab_size, 1), size=(n, o.seq_len - 1))
        source[:, :-1] = np.where(noisy, noise, source[:, :-1])
        inputs = np.concatenate([source, np.full((n, o.seq_len), o.vocab_size)], axis=1)  # (n, 2S)
        targets = np.concatenate([np.full((n, o.seq_len), IGNORE), source], axis=1)
        return Batch(inputs, targets)


@dataclass(frozen=True)
class MemorizationOptions:
    """MAD's memorization baseline: vocabulary 256, length 32, the map from seed 12345."""

    vocab_size: int = 256
    seq_len: int = 32
    noise_vocab_size: int = 0
    frac_noise: float = 0.0
    kv_map_seed: int = 12345

    def __post_init__(self) -> None:
        task = "memorization"
        require(
            self.seq_len >= 2 and self.seq_len % 2 == 0,
            f"{task}: seq_len={self.seq_len}: valid values are even and >= 2",
        )
        check_noise(task, self.noise_vocab_size, self.frac_noise, below_one=False)
        least = 3 + self.noise_vocab_size
        require(
            self.vocab_size >= least,
            f"{task}: vocab_size={self.vocab_size} is too small for keys, values, {self.noise_vocab_size}"
            f" noise tokens and the insert token: valid range >= {least}",
        )


class Memorization(RecallTask):
    """Vocabulary V (insert token V-1); classes V - 1 - noise_vocab_size."""

    name: ClassVar[str] = "memorization"
    source: ClassVar[str] = "athms/mad-lab mad/data/instances.py L352-459"
    source_training_set: ClassVar[str] = "fixed"
    source_loss: ClassVar[str] = "labelled"
    Options: ClassVar[type] = MemorizationOptions
    options: MemorizationOptions

    def __init__(self, options: MemorizationOptions) -> None:
        super().__init__(options)
        data = options.vocab_size - 1 - options.noise_vocab_size
        map_rng = np.random.default_rng(options.kv_map_seed)
        self.value_of = data // 2 + map_rng.permutation(data - data // 2)[: data // 2]  # (D//2,) key -> value

    @property
    def vocab_size(self) -> int:
        return self.options.vocab_size

    @property
    def num_classes(self) -> int:
        return self.options.vocab_size - 1 - self.options.noise_vocab_size

    @property
    def seq_len(self) -> int:
        return self.options.seq_len

    def _draw(self, rng: np.random.Generator, n: int, split: str) -> Batch:
        o = self.options
        pairs, data, insert = o.seq_len // 2, o.vocab_size - 1 - o.noise_vocab_size, o.vocab_size - 1
        keys = rng.integers(0, data // 2, size=(n, pairs))  # (n, P)
        noise = rng.random((n, pairs)) < o.frac_noise
        noise[np.arange(n), rng.integers(0, pairs, size=n)] = False
        noise_tokens = rng.integers(data, data + max(o.noise_vocab_size, 1), size=(n, pairs, 2))
        pair_tokens = np.stack([keys, np.full_like(keys, insert)], axis=2)  # (n, P, 2)
        inputs = np.where(noise[..., None], noise_tokens, pair_tokens).reshape(n, -1)
        answers = np.where(noise, IGNORE, self.value_of[keys])  # (n, P)
        targets = np.stack([np.full_like(keys, IGNORE), answers], axis=2).reshape(n, -1)
        return Batch(inputs, targets)
