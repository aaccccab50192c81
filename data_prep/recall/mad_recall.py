"""MAD's in-context recall and noisy in-context recall.

Source: athms/mad-lab ``mad/data/instances.py``, ``generate_in_context_recall_instance``
(L31-140; noisy recall calls it with noise, L145-181); defaults: ``configs/tasks/in-context-recall.yml``
and ``configs/tasks/noisy-in-context-recall.yml`` over ``MADConfig`` (``mad/configs.py`` L29-70).

With V = ``vocab_size`` and N = ``noise_vocab_size``, the token ids are: keys [0, D//2), values
[D//2, D), noise [D, D+N), and, unless ``multi_query``, a copy prefix V-1; D = V - N (- 1 without
``multi_query``). A sequence of ``seq_len`` (S) tokens is S//2 - 1 slots of two tokens, each a
pair ``k v`` (k uniform over the keys, with repeats; a key keeps the value, uniform over the
values, it was first given) or, with probability ``frac_noise``, two noise tokens (one slot is
never noise); then a final ``k v`` whose key is uniform over the keys shown (after the copy
prefix unless ``multi_query``). As in MAD's test form, the inputs drop the last token and the
targets are shifted by one: a key's position carries the label of the value that follows it,
for every repeated key under ``multi_query`` and for the final key always. Length: S - 1 with
``multi_query``, S without (the source's lengths).

Differences from the source:
- MAD trains on every next token (``is_training``: targets = inputs shifted) and scores the
  labelled ones; here the targets are the labelled ones in both splits (``source_loss``).
- ``mask_answers`` (default on) replaces every labelled value in the input, the value after a
  repeated key, by a mask token V (appended to the vocabulary): the answer is then never in
  the input, for causal and non-causal models alike. Off, the inputs are MAD's exactly (a
  non-causal model then sees each answer at the next position).
- the slot kept free of noise is one of the S//2 - 1 drawn slots; the source draws its index
  among S//2, one of which no slot has, and then a sequence drawn all noise has no key to probe.
MAD draws a fixed training set (``MemoryDataset``, ``mad/data/dataset.py`` L129-248).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from data_prep.recall.base import IGNORE, Batch, MaskedAnswerTask, check_noise, require
from data_prep.recall.sampling import first_index, hide_answers

_SOURCE = "athms/mad-lab mad/data/instances.py L31-140"


@dataclass(frozen=True)
class InContextRecallOptions:
    """MAD's in-context-recall baseline: vocabulary 16, length 128, multi-query, no noise."""

    vocab_size: int = 16
    seq_len: int = 128
    multi_query: bool = True
    noise_vocab_size: int = 0
    frac_noise: float = 0.0
    mask_answers: bool = True
    task: ClassVar[str] = "in_context_recall"

    def __post_init__(self) -> None:
        task = self.task
        require(
            self.seq_len >= 4 and self.seq_len % 2 == 0,
            f"{task}: seq_len={self.seq_len}: valid values are even and >= 4",
        )
        check_noise(task, self.noise_vocab_size, self.frac_noise, below_one=True)
        least = 2 + self.noise_vocab_size + (0 if self.multi_query else 1)
        require(
            self.vocab_size >= least,
            f"{task}: vocab_size={self.vocab_size} is too small for keys, values and"
            f" {self.noise_vocab_size} noise tokens: valid range >= {least}",
        )

    @property
    def data_tokens(self) -> int:
        """D: the number of key and value tokens."""
        return self.vocab_size - self.noise_vocab_size - (0 if self.multi_query else 1)


@dataclass(frozen=True)
class NoisyInContextRecallOptions(InContextRecallOptions):
    """MAD's noisy-in-context-recall baseline: vocabulary 32 with 16 noise tokens, 20% noise."""

    vocab_size: int = 32
    noise_vocab_size: int = 16
    frac_noise: float = 0.2
    task: ClassVar[str] = "noisy_in_context_recall"


class InContextRecall(MaskedAnswerTask):
    """MAD's in-context recall; vocabulary V (+1 mask token with ``mask_answers``), classes D."""

    name: ClassVar[str] = "in_context_recall"
    source: ClassVar[str] = _SOURCE
    source_training_set: ClassVar[str] = "fixed"
    source_loss: ClassVar[str] = "next-token"
    Options: ClassVar[type] = InContextRecallOptions
    options: InContextRecallOptions

    @property
    def seq_len(self) -> int:
        return self.options.seq_len - int(self.options.multi_query)

    def _draw(self, rng: np.random.Generator, n: int, split: str) -> Batch:
        opts = self.options
        data = opts.data_tokens
        num_keys, slots = data // 2, opts.seq_len // 2 - 1
        rows = np.arange(n)[:, None]

        keys = rng.integers(0, num_keys, size=(n, slots))  # (n, slots)
        value_of = rng.integers(num_keys, data, size=(n, num_keys))  # (n, K) each key's value
        noise = rng.random((n, slots)) < opts.frac_noise  # (n, slots)
        noise[rows[:, 0], rng.integers(0, slots, size=n)] = False
        noise_tokens = rng.integers(data, data + max(opts.noise_vocab_size, 1), size=(n, slots, 2))

        codes = np.where(noise, num_keys + np.arange(slots), keys)  # noise slots never repeat
        repeated = first_index(codes) < np.arange(slots)  # (n, slots) key shown before
        values = value_of[rows, keys]  # (n, slots)
        pairs = np.stack([keys, values], axis=2)  # (n, slots, 2)
        pairs = np.where(noise[..., None], noise_tokens, pairs)
        answers = np.where(repeated & opts.multi_query, values, IGNORE)  # (n, slots) at the value

        shown = np.zeros((n, num_keys + slots), bool)
        shown[rows, codes] = True
        probe = np.argmax(np.where(shown[:, :num_keys], rng.random((n, num_keys)), -1.0), axis=1)  # (n,)
        final = [probe, value_of[np.arange(n), probe]]
        if not opts.multi_query:
            final.insert(0, np.full(n, opts.vocab_size - 1))
        tokens = np.concatenate([pairs.reshape(n, -1), np.stack(final, axis=1)], axis=1)  # (n, S(+1))
        labels = np.full(tokens.shape, IGNORE, np.int64)
        labels[:, 1 : 2 * slots : 2] = answers
        labels[:, -1] = final[-1]

        inputs, targets = tokens[:, :-1], labels[:, 1:]
        if opts.mask_answers:
            inputs = hide_answers(inputs, targets, opts.vocab_size)
        return Batch(np.ascontiguousarray(inputs), np.ascontiguousarray(targets))


class NoisyInContextRecall(InContextRecall):
    """MAD's noisy in-context recall: in-context recall with noise pairs among the key-value pairs."""

    name: ClassVar[str] = "noisy_in_context_recall"
    source: ClassVar[str] = "athms/mad-lab mad/data/instances.py L145-181 (calls L31-140)"
    Options: ClassVar[type] = NoisyInContextRecallOptions
