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
        # the k smallest in order of size: a random order (population < 4k², so a full sort is cheap)
        out[start : start + len(u)] = low + np.argsort(u, axis=1)[:, :k]
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
    m = codes.shape[1]
    order = np.argsort(codes, axis=1, kind="stable")  # (n, m) by code, then by column
    ranked = np.take_along_axis(codes, order, axis=1)
    new = np.ones(codes.shape, bool)
    new[:, 1:] = ranked[:, 1:] != ranked[:, :-1]  # the first of its code in sorted order
    head = np.maximum.accumulate(np.where(new, np.arange(m), 0), axis=1)  # (n, m) its group's start
    first = np.empty_like(order)
    np.put_along_axis(first, order, np.take_along_axis(order, head, axis=1), axis=1)
    return first


def hide_answers(inputs: np.ndarray, targets: np.ndarray, token: int) -> np.ndarray:
    """Copy of next-token-form ``inputs`` (n, L) with ``token`` wherever an input is the label
    of the position before it, so no labelled answer stays in the input."""
    hidden = inputs.copy()
    hidden[:, 1:][targets[:, :-1] != IGNORE] = token
    return hidden


def right_align(keep: np.ndarray, length: int, *filled: tuple[np.ndarray, int]) -> list[np.ndarray]:
    """(n, F) keep mask and (values (n, F), fill) pairs -> per pair (n, length): each row's kept
    values in order, at the end, ``fill`` before them."""
    n, count = len(keep), keep.sum(axis=1)  # (n,)
    if count.max(initial=0) > length:
        raise AssertionError(f"{count.max()} kept values exceed length {length}")
    dest = (length - count)[:, None] + np.cumsum(keep, axis=1) - 1  # (n, F)
    at = (np.arange(n)[:, None] * length + dest)[keep]  # flat places of the kept values
    out = []
    for values, fill in filled:
        aligned = np.full(n * length, fill, np.int64)
        aligned[at] = values[keep]
        out.append(aligned.reshape(n, length))
    return out
