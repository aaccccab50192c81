"""Multi-query associative recall (MQAR), as Zoology defines it.

Source: HazyResearch/zoology ``zoology/data/multiquery_ar.py``, ``multiquery_ar`` (L18-142),
defaults from ``MQARConfig`` (L8-13) and ``DataSegmentConfig`` (``zoology/config.py`` L67-73).

An example of length ``input_seq_len`` (L) with P = ``num_kv_pairs``: first the P pairs
``k v`` (keys P distinct tokens of [1, V//2), values P distinct tokens of [V//2, V)); then each
key once more as a query, at position 2P + 2g, the gaps g being P distinct slots of
(L - 2P)//2 drawn one after another with weight ∝ i**(power_a - 1) for slot i+1 (power_a small:
queries close to the pairs); every other position is noise, uniform over [0, V) when
``random_non_queries`` (else token 0). The label of a query is its key's value, at the query's
position; the value never follows its query (noise follows it).

Zoology draws a fixed set per data segment (``DataSegment.from_config``; ``zoology/data/utils.py``
L24-90) and trains on the labelled positions only, as here. Its extra assertion
``vocab_size > input_seq_len`` (L89) is not needed for the task and is not enforced; its
``num_passes`` (repeating the pairs, a later JRT addition) is left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from data_prep.recall.base import IGNORE, Batch, RecallTask, require
from data_prep.recall.sampling import draw_distinct, draw_weighted_distinct


def gap_weights(space: int, power_a: float) -> np.ndarray:
    """(space,) Zoology's query-gap law: p_i ∝ a * i**(a - 1), i = 1..space, normalised."""
    p = power_a * np.arange(1, space + 1) ** (power_a - 1)
    return p / p.sum()


@dataclass(frozen=True)
class MqarOptions:
    """Zoology's MQARConfig defaults: vocabulary 8192, length 64, 8 pairs, power_a 0.01."""

    vocab_size: int = 8192
    input_seq_len: int = 64
    num_kv_pairs: int = 8
    power_a: float = 0.01
    random_non_queries: bool = True

    def __post_init__(self) -> None:
        length, pairs = self.input_seq_len, self.num_kv_pairs
        require(
            length >= 4 and length % 2 == 0, f"mqar: input_seq_len={length}: valid values are even and >= 4"
        )
        require(
            1 <= pairs <= length // 4,
            f"mqar: num_kv_pairs={pairs} does not fit input_seq_len={length}: valid range 1..{length // 4}",
        )
        require(
            self.vocab_size >= 2 * pairs + 2,
            f"mqar: vocab_size={self.vocab_size} is too small for {pairs} distinct keys and values:"
            f" valid range >= {2 * pairs + 2}",
        )
        require(self.power_a > 0, f"mqar: power_a={self.power_a}: valid range > 0")


class Mqar(RecallTask):
    """Zoology's MQAR; inputs and targets (n, input_seq_len); vocabulary and classes: vocab_size."""

    name: ClassVar[str] = "mqar"
    source: ClassVar[str] = "HazyResearch/zoology zoology/data/multiquery_ar.py L18-142"
    source_training_set: ClassVar[str] = "fixed"
    source_loss: ClassVar[str] = "labelled"
    Options: ClassVar[type] = MqarOptions
    options: MqarOptions

    @property
    def vocab_size(self) -> int:
        return self.options.vocab_size

    @property
    def num_classes(self) -> int:
        return self.options.vocab_size

    @property
    def seq_len(self) -> int:
        return self.options.input_seq_len

    def _draw(self, rng: np.random.Generator, n: int, split: str) -> Batch:
        opts = self.options
        vocab, length, pairs = opts.vocab_size, opts.input_seq_len, opts.num_kv_pairs
        keys = draw_distinct(rng, n, 1, vocab // 2, pairs)  # (n, P)
        values = draw_distinct(rng, n, vocab // 2, vocab, pairs)  # (n, P)
        space = (length - 2 * pairs) // 2
        gaps = draw_weighted_distinct(rng, n, gap_weights(space, opts.power_a), pairs)  # (n, P)
        queries = 2 * pairs + 2 * gaps  # (n, P) query positions

        inputs = np.zeros((n, length), np.int64)
        inputs[:, 0 : 2 * pairs : 2] = keys
        inputs[:, 1 : 2 * pairs : 2] = values
        np.put_along_axis(inputs, queries, keys, axis=1)
        targets = np.full((n, length), IGNORE, np.int64)
        np.put_along_axis(targets, queries, values, axis=1)
        if opts.random_non_queries:
            noise = inputs == 0  # keys start at 1 and values at V//2: only the blanks are 0
            inputs[noise] = rng.integers(0, vocab, size=int(noise.sum()))
        return Batch(inputs, targets)
