"""Vectorised draws and layouts the recall tasks share (numpy only; no loop per token)."""

from __future__ import annotations

import numpy as np

from data_prep.recall.base import IGNORE

_CHUNK_FLOATS = 1 << 22  # bounds the (rows, population) scratch of draw_distinct


def draw_distinct(rng: np.random.Generator, n: int, low: int, high: int, k: int) -> np.ndarray:
    """(n, k) int64: per row, k distinct integers of [low, high) in uniformly random order."""
    population = high - low
    if 4 * k * k <= population:  # a repeat is rare: redraw the rows that have one
        out = rng.integers(low, high, size=(n, k))
        redo = np.arange(n)
        while redo.size:  # one pass per round of redraws, each round a few rows
            ordered = np.sort(out[redo], axis=1)
            redo = redo[(ordered[:, 1:] == ordered[:, :-1]).any(axis=1)]
            out[redo] = rng.integers(low, high, size=(redo.size, k))
        return out
    rows = max(1, _CHUNK_FLOATS // population)
    out = np.empty((n, k), np.int64)
    for start in range(0, n, rows):  # one pass per chunk of rows bounds the memory
        u = rng.random((min(rows, n - start), population))  # (rows, population)
        pick = np.argpartition(u, k - 1, axis=1)[:, :k]  # (rows, k) the k smallest, any order
        order = np.argsort(np.take_along_axis(u, pick, axis=1), axis=1)  # random order
        out[start : start + len(u)] = low + np.take_along_axis(pick, order, axis=1)
    return out


def draw_weighted_distinct(rng: np.random.Generator, n: int, weights: np.ndarray, k: int) -> np.ndarray:
    """(n, k): per row, k distinct indices of ``weights`` (m,), in arbitrary order.

    The set follows sequential draws without replacement in proportion to the remaining
    weights (Gumbel top-k), the law of numpy's ``choice(m, k, replace=False, p=weights)``.
    """
    scores = np.log(weights) + rng.gumbel(size=(n, len(weights)))  # (n, m)
    return np.argpartition(-scores, k - 1, axis=1)[:, :k]


def first_index(codes: np.ndarray) -> np.ndarray:
    """(n, m) codes -> (n, m): per row, the column where each entry's code first occurs."""
    n, m = codes.shape
    rows = np.repeat(np.arange(n), m)  # (n*m,)
    cols = np.tile(np.arange(m), n)  # (n*m,)
    order = np.lexsort((cols, codes.ravel(), rows))  # by row, code, column
    sorted_codes, sorted_rows = codes.ravel()[order], rows[order]
    starts = np.ones(n * m, bool)
    starts[1:] = (sorted_codes[1:] != sorted_codes[:-1]) | (sorted_rows[1:] != sorted_rows[:-1])
    head = np.maximum.accumulate(np.where(starts, np.arange(n * m), 0))  # group start per entry
    first = np.empty(n * m, np.int64)
    first[order] = cols[order][head]
    return first.reshape(n, m)


def hide_answers(inputs: np.ndarray, targets: np.ndarray, token: int) -> np.ndarray:
    """Copy of next-token-form ``inputs`` (n, L) with ``token`` wherever an input is the label
    of the position before it, so no labelled answer stays in the input."""
    hidden = inputs.copy()
    hidden[:, 1:][targets[:, :-1] != IGNORE] = token
    return hidden


def right_align(values: np.ndarray, keep: np.ndarray, length: int, fill: int) -> np.ndarray:
    """(n, F) values and keep mask -> (n, length): each row's kept values in order, at the end."""
    count = keep.sum(axis=1)  # (n,)
    if count.max(initial=0) > length:
        raise AssertionError(f"{count.max()} kept values exceed length {length}")
    dest = (length - count)[:, None] + np.cumsum(keep, axis=1) - 1  # (n, F)
    out = np.full((len(values), length), fill, np.int64)
    out[np.nonzero(keep)[0], dest[keep]] = values[keep]
    return out
