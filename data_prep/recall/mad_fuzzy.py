"""MAD's fuzzy in-context recall: keys and values are motifs of 1..k (1..v) distinct tokens.

Source: athms/mad-lab ``mad/data/instances.py``, ``generate_fuzzy_in_context_recall_instance``
(L186-347); defaults: ``configs/tasks/fuzzy-in-context-recall.yml`` over ``MADConfig``.

With V = ``vocab_size``, N = ``noise_vocab_size``, D = V - 1 - N (V - 2 - N without
``multi_query``): keys are motifs over [0, D//2), values over [D//2, D), noise [D, D+N), a pad
token V-1 (V-2 without ``multi_query``, then V-1 is the copy prefix). A motif of size m is m
distinct tokens in random order, its size uniform over 1..k_motif_size (keys) or
1..v_motif_size (values); in the test split every key has k_motif_size tokens. The sequence is
segments ``key value`` (a key keeps the value of its first showing) or, with probability
``frac_noise``, as many noise tokens, added while the length is below
S - (probe pair size) - (k_motif_size + v_motif_size); one probe pair is put in at the first
segment start at or after a uniform index of [0, S - 2 * probe pair size), unless its key came
up by itself before; then the probe pair again at the end (after the copy prefix unless
``multi_query``), and pads on the left up to S + 1 tokens. As in MAD's test form, the inputs
drop the last token and the targets are shifted: a repeated key's last token and its value's
tokens but the last carry the value's tokens (under ``multi_query``), as does the final probe.

Differences from the source:
- MAD trains on every next token; here the targets are the labelled ones (``source_loss``).
- ``mask_answers`` (default on) replaces each labelled value token in the input by a mask token
  V (appended to the vocabulary), so no answer stays in the input; off, the inputs are MAD's.
- where the source's loop ends before reaching the probe index (it then omits the probe pair,
  and the final query may have no answer), the probe goes in at the last segment start instead.
MAD draws a fixed training set (``MemoryDataset``, ``mad/data/dataset.py`` L129-248).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import ClassVar

import numpy as np

from data_prep.recall.base import IGNORE, Batch, MaskedAnswerTask, check_noise, require
from data_prep.recall.sampling import draw_distinct, first_index, hide_answers, right_align


@dataclass(frozen=True)
class FuzzyRecallOptions:
    """MAD's fuzzy-in-context-recall baseline: vocabulary 16, length 128, motifs up to 3."""

    vocab_size: int = 16
    seq_len: int = 128
    k_motif_size: int = 3
    v_motif_size: int = 3
    multi_query: bool = True
    noise_vocab_size: int = 0
    frac_noise: float = 0.0
    mask_answers: bool = True

    def __post_init__(self) -> None:
        task, k, v = "fuzzy_in_context_recall", self.k_motif_size, self.v_motif_size
        require(k >= 1 and v >= 1, f"{task}: k_motif_size={k}, v_motif_size={v}: valid range >= 1")
        require(
            self.seq_len > 2 * (k + v),
            f"{task}: seq_len={self.seq_len} does not fit motifs of {k}+{v} tokens:"
            f" valid range >= {2 * (k + v) + 1}",
        )
        check_noise(task, self.noise_vocab_size, self.frac_noise, below_one=True)
        least = max(2 * k, 2 * v - 1) + self.noise_vocab_size + (1 if self.multi_query else 2)
        require(
            self.vocab_size >= least,
            f"{task}: vocab_size={self.vocab_size} is too small for key motifs of {k} and value motifs"
            f" of {v} distinct tokens: valid range >= {least}",
        )
        require((self.data_tokens // 2 + 1) ** k < 2**62, f"{task}: k_motif_size={k} is too large to index")

    @property
    def data_tokens(self) -> int:
        """D: the number of key and value tokens."""
        return self.vocab_size - self.noise_vocab_size - (1 if self.multi_query else 2)


@dataclass(frozen=True)
class Segments:
    """Natural segments as drawn, (n, segs) each: key and value motif sizes, (n, segs, k) keys,
    (n, segs, v) values, noise flags and (n, segs, k+v) noise tokens."""

    k_size: np.ndarray
    v_size: np.ndarray
    keys: np.ndarray
    values: np.ndarray
    noise: np.ndarray
    noise_tokens: np.ndarray

    def extended(self, more: Segments) -> Segments:
        """These segments, then ``more`` after them in every row."""
        return Segments(
            **{
                f.name: np.concatenate([getattr(self, f.name), getattr(more, f.name)], axis=1)
                for f in fields(self)
            }
        )


@dataclass(frozen=True)
class Probe:
    """(n, k) key and (n, v) value motifs, their (n,) sizes, and the (n,) index it goes in at."""

    key: np.ndarray
    value: np.ndarray
    k_size: np.ndarray
    v_size: np.ndarray
    index: np.ndarray


@dataclass(frozen=True)
class NaturalOrder:
    """Segments before the probe goes in: where each key first showed, whether it is the probe
    key, the value each segment shows (its key's first), and (n, segs) where each starts."""

    segments: Segments
    probe: Probe
    first: np.ndarray
    is_probe: np.ndarray
    values: np.ndarray
    v_size: np.ndarray
    starts: np.ndarray


def _motif_code(tokens: np.ndarray, sizes: np.ndarray, base: int) -> np.ndarray:
    """(..., m) tokens and (...) sizes -> (...) an integer naming the motif tokens[..., :size]."""
    digits = np.where(np.arange(tokens.shape[-1]) < sizes[..., None], tokens + 1, 0)
    return (digits * base ** np.arange(tokens.shape[-1])).sum(axis=-1)


def _layout(first: np.ndarray, second: np.ndarray, first_size: np.ndarray, second_size: np.ndarray):
    """(..., a) and (..., b) motifs -> (..., a+b) tokens ``first[:size] second[:size]``, the mask of
    the tokens that exist, and the mask of the second motif's places."""
    width = first.shape[-1]
    t = np.arange(width + second.shape[-1])
    idx = np.where(t < first_size[..., None], t, width + t - first_size[..., None])
    tokens = np.take_along_axis(
        np.concatenate([first, second], axis=-1), np.minimum(idx, len(t) - 1), axis=-1
    )
    return tokens, t < (first_size + second_size)[..., None], t >= first_size[..., None]


class FuzzyInContextRecall(MaskedAnswerTask):
    """MAD's fuzzy recall; vocabulary V (+1 mask token with ``mask_answers``), classes D."""

    name: ClassVar[str] = "fuzzy_in_context_recall"
    source: ClassVar[str] = "athms/mad-lab mad/data/instances.py L186-347"
    source_training_set: ClassVar[str] = "fixed"
    source_loss: ClassVar[str] = "next-token"
    Options: ClassVar[type] = FuzzyRecallOptions
    options: FuzzyRecallOptions

    @property
    def seq_len(self) -> int:
        return self.options.seq_len

    def _draw(self, rng: np.random.Generator, n: int, split: str) -> Batch:
        o = self.options
        probe = self.draw_probe(rng, n, split)
        # Segments are i.i.d., so drawing more once every row's last one starts where neither the
        # loop's end nor the probe's index reaches changes nothing (tests/test_data_recall.py checks
        # it); a typical row needs about seq / mean.
        reach = np.maximum(self.loop_end(probe), probe.index)  # (n,)
        mean = (o.k_motif_size + 1) / 2 + (o.v_motif_size + 1) / 2
        natural = self.natural(self.draw_segments(rng, n, int(o.seq_len / mean) + 4, split), probe)
        while (natural.starts[:, -1] < reach).any():
            more = self.draw_segments(rng, n, int(o.seq_len / mean / 4) + 1, split)
            natural = self.natural(natural.segments.extended(more), probe)
        return self.assemble(natural)

    def _key_sizes(self, rng: np.random.Generator, shape: tuple[int, ...], split: str) -> np.ndarray:
        km = self.options.k_motif_size
        return np.full(shape, km) if split == "test" else rng.integers(1, km + 1, size=shape)

    def draw_probe(self, rng: np.random.Generator, n: int, split: str) -> Probe:
        """The probe pair of each row and the uniform index it goes in at."""
        o = self.options
        data, pk_size = o.data_tokens, self._key_sizes(rng, (n,), split)
        pv_size = rng.integers(1, o.v_motif_size + 1, size=n)
        return Probe(
            key=draw_distinct(rng, n, 0, data // 2, o.k_motif_size),
            value=draw_distinct(rng, n, data // 2, data, o.v_motif_size),
            k_size=pk_size,
            v_size=pv_size,
            index=rng.integers(0, o.seq_len - 2 * (pk_size + pv_size)),  # (n,)
        )

    def draw_segments(self, rng: np.random.Generator, n: int, count: int, split: str) -> Segments:
        """``count`` natural segments per row, each drawn as the source's loop draws one."""
        o = self.options
        km, vm, data = o.k_motif_size, o.v_motif_size, o.data_tokens
        return Segments(
            k_size=self._key_sizes(rng, (n, count), split),
            v_size=rng.integers(1, vm + 1, size=(n, count)),
            keys=draw_distinct(rng, n * count, 0, data // 2, km).reshape(n, count, km),
            values=draw_distinct(rng, n * count, data // 2, data, vm).reshape(n, count, vm),
            noise=rng.random((n, count)) < o.frac_noise,
            noise_tokens=rng.integers(data, data + max(o.noise_vocab_size, 1), size=(n, count, km + vm)),
        )

    def loop_end(self, probe: Probe) -> np.ndarray:
        """(n,) the source's loop adds segments while the length is below this."""
        o = self.options
        return o.seq_len - (probe.k_size + probe.v_size) - (o.k_motif_size + o.v_motif_size)

    def natural(self, segments: Segments, probe: Probe) -> NaturalOrder:
        """The segments in the source's order, before the probe pair goes in."""
        num_keys, (n, segs) = self.options.data_tokens // 2, segments.k_size.shape
        rows = np.arange(n)[:, None]
        code = _motif_code(segments.keys, segments.k_size, num_keys + 1)  # (n, segs)
        code = np.where(segments.noise, -1 - np.arange(segs), code)  # noise never repeats
        first = first_index(code)  # (n, segs) where each key was first shown
        is_probe = code == _motif_code(probe.key, probe.k_size, num_keys + 1)[:, None]
        values = np.where(is_probe[..., None], probe.value[:, None], segments.values[rows, first])
        v_size = np.where(is_probe, probe.v_size[:, None], segments.v_size[rows, first])
        seg_len = segments.k_size + v_size  # (n, segs); noise has its own sizes as first == self
        starts = np.cumsum(seg_len, axis=1) - seg_len  # (n, segs)
        return NaturalOrder(segments, probe, first, is_probe, values, v_size, starts)

    def assemble(self, natural: NaturalOrder) -> Batch:
        """The batch of these segments and probes; a segment that starts past ``loop_end`` is unused."""
        o, probe, seg = self.options, natural.probe, natural.segments
        seq = o.seq_len
        n, segs = seg.k_size.shape
        rows, cols = np.arange(n)[:, None], np.arange(segs)
        first, is_probe, starts = natural.first, natural.is_probe, natural.starts
        end = self.loop_end(probe)  # (n,)
        at = np.minimum(np.argmax(starts >= probe.index[:, None], axis=1), (starts < end[:, None]).sum(1) - 1)
        inserted = ~np.any(is_probe & (cols < at[:, None]), axis=1)  # (n,) probe key not yet shown
        at = np.where(inserted, at, segs)

        # final order: natural segments with the probe pair at slot `at`
        slots = np.arange(segs + 1)
        probe_slot = slots == at[:, None]  # (n, segs+1)
        nat = np.minimum(np.where(slots < at[:, None], slots, slots - 1), segs - 1)  # (n, segs+1)
        tokens, valid, in_value = _layout(
            seg.keys[rows, nat], natural.values[rows, nat], seg.k_size[rows, nat], natural.v_size[rows, nat]
        )
        tokens = np.where(seg.noise[rows, nat][..., None], seg.noise_tokens[rows, nat], tokens)
        p_tokens, p_valid, p_value = _layout(probe.key, probe.value, probe.k_size, probe.v_size)  # (n, width)
        tokens = np.where(probe_slot[..., None], p_tokens[:, None], tokens)
        valid = np.where(probe_slot[..., None], p_valid[:, None] & inserted[:, None, None], valid)
        lengths = valid.sum(axis=2)  # (n, segs+1)
        included = (np.cumsum(lengths, axis=1) - lengths) < end[:, None]
        keep = valid & included[..., None]  # (n, segs+1, width)

        repeated = (first[rows, nat] != nat) | (is_probe[rows, nat] & inserted[:, None])
        labelled = repeated & ~seg.noise[rows, nat] & ~probe_slot & o.multi_query
        labels = np.where(labelled[..., None] & in_value, tokens, IGNORE)

        final = [p_tokens]
        final_keep, final_labels = [p_valid], [np.where(p_value, p_tokens, IGNORE)]
        if not o.multi_query:
            final.insert(0, np.full((n, 1), o.vocab_size - 1))
            final_keep.insert(0, np.ones((n, 1), bool))
            final_labels.insert(0, np.full((n, 1), IGNORE))
        flat = np.concatenate([tokens.reshape(n, -1), *final], axis=1)
        flat_keep = np.concatenate([keep.reshape(n, -1), *final_keep], axis=1)
        flat_labels = np.concatenate([labels.reshape(n, -1), *final_labels], axis=1)
        pad = o.vocab_size - 1 if o.multi_query else o.vocab_size - 2
        full, full_labels = right_align(flat_keep, seq + 1, (flat, pad), (flat_labels, IGNORE))  # (n, S+1)

        inputs, targets = full[:, :-1], full_labels[:, 1:]
        if o.mask_answers:
            inputs = hide_answers(inputs, targets, o.vocab_size)
        return Batch(np.ascontiguousarray(inputs), np.ascontiguousarray(targets))
