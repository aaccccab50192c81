"""Lookup tables for growing Pathfinder snakes at one setting and paddle margin.

Every paddle the generator can draw has a *key*: ``degrees + 180`` (0..359) for a snake's first
paddle, which points at a whole number of degrees, and ``360 + i`` for the paddle of extension
step ``i`` (see ``PaddleSet``). A snake remembers the key of its last paddle; the tables below,
indexed by key, hold what the next move needs, computed once with the original's arithmetic
(coordinates rounded up after moving by ``distance * sin / cos`` of the angle).

The canvas is the image with a margin (``PaddleSet.pad``), stored flat, ``width`` pixels a row.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from data_prep.pathfinder.settings import Settings
from data_prep.pathfinder.shapes import Paddle, flip, paddle_set

SEED_KEYS = 360  # first paddles point at -180..179 degrees
FREE = 0.3  # mask values up to this are free for seeding (the original's ceil(mask - 0.3) == 0)


def _moves(angles: np.ndarray, distance: float) -> np.ndarray:
    """``distance`` along each angle (n,) as (row, col) displacements (n, 2), with math.sin/cos."""
    return np.array([(distance * math.sin(angle), distance * math.cos(angle)) for angle in angles])


class Layout:
    """Tables of one setting and margin (shapes give the number of keys, K, and steps, n):

    - ``paddles`` [K] by key; ``mask_offsets`` (m, K) int and ``mask_values`` (m, K): each paddle
      mask's nonzero pixels as flat offsets from its start (a column per key, padded by repeating
      its last entry, which changes neither a maximum nor a write); ``line_offsets`` and
      ``line_values`` (l, K) the same for its drawn line (pixel-major, so that a maximum over a
      paddle's pixels runs over the first axis, which numpy does fast);
    - ``advance`` (K, 2): the move of a pivot along the paddle, by ``length + 2 margin``;
    - ``step_near`` (m, n, 1): flat offsets from a pivot of the pixels near each candidate head;
    - ``turn`` (n, K): the weight cos²(min(turn * continuity, 90°)) of each step after the paddle;
    - ``head`` and ``back`` (360, 2): from a first paddle's start to its end (``length``) and from
      its end to its pivot (``length + margin``, backwards), by degrees + 180;
    - ``beside`` (360, 2): ``seed_distance`` along each whole degree 0..359 (the second main
      snake starts there from the first);
    - ``centre_starts`` (s, 2): for each key < 360 in turn, the image pixels where the first main
      snake may start (``starts`` with a band of twice the seed distance), ``centre_first`` (360,)
      and ``centre_count`` (360,) where each key's run begins and how long it is, and
      ``centre_inside`` (s,) bool whether the paddle's end and pivot then fall in the image;
    - ``seed_kernels`` (360, k): each first paddle's seed kernel as flat offsets (rows padded by
      repeating their last entry); ``seed_blocked`` (360,) bool: the keys whose seed always fails
      (``blocked``), ``seed_open`` the other keys;
    - ``empty`` (W, W): the occupancy mask with the padding border on; ``inside`` (W * W,) 1.0
      on image pixels, else 0.0; ``edge`` (W * W,) bool: the image's outermost pixels.
    """

    def __init__(self, settings: Settings, margin: int) -> None:
        self.shapes = shapes = paddle_set(settings, margin)
        self.pad, self.width, self.size = shapes.pad, shapes.width, settings.resolution
        self.inner = (slice(self.pad, self.pad + self.size),) * 2
        self.empty = np.zeros((self.width, self.width), dtype=np.float32)  # float32, as the original's
        ring, edge = self.empty[self.inner], settings.padding
        ring[:edge], ring[-edge:], ring[:, :edge], ring[:, -edge:] = 1.0, 1.0, 1.0, 1.0
        inside = np.zeros(self.empty.shape)
        inside[self.inner] = 1.0
        self.inside = inside.ravel()
        edge = np.zeros(self.empty.shape, dtype=bool)
        edge[self.inner] = True
        edge[self.pad + 1 : self.pad + self.size - 1, self.pad + 1 : self.pad + self.size - 1] = False
        self.edge = edge.ravel()

        seed_angles = np.arange(-180, 180) * math.pi / 180
        self.paddles: list[Paddle] = [shapes.seed_paddle(degrees) for degrees in range(-180, 180)]
        self.paddles += shapes.step_paddles
        angles = np.concatenate([seed_angles, shapes.step_angles])
        kernels = [self.shapes.flat(paddle.seed_kernel) for paddle in self.paddles[:SEED_KEYS]]
        self.seed_kernels = np.array([_pad_row(kernel, max(map(len, kernels))) for kernel in kernels])
        self.seed_blocked = np.array([blocked(p.seed_kernel, self.size) for p in self.paddles[:SEED_KEYS]])
        self.seed_open = np.flatnonzero(~self.seed_blocked)
        self.mask_offsets, self.mask_values = _table([(p.mask_offsets, p.mask_values) for p in self.paddles])
        self.line_offsets, self.line_values = _table([(p.line_offsets, p.line_values) for p in self.paddles])
        self.advance = _moves(angles, shapes.length + 2 * margin)
        self.stride = np.array([self.width, 1])
        self.origin = self.pad * self.width + self.pad  # flat index of image pixel (0, 0)
        self.step_near = (shapes.near[:, None] + shapes.step_offsets[None, :])[:, :, None]
        gap = np.abs(shapes.step_angles[:, None] - angles[None, :])
        turn = np.minimum(np.minimum(gap, 2 * math.pi - gap) * settings.continuity, math.pi / 2)
        self.turn = np.maximum(np.cos(turn), 0.0) ** 2
        self.head = _moves(seed_angles, shapes.length)
        self.back = _moves([flip(angle) for angle in seed_angles], shapes.length + margin)
        self.beside = _moves(np.arange(360) * math.pi / 180, settings.seed_distance)
        band = 2 * settings.seed_distance
        runs = [starts(self.empty, self, self.paddles[key], band) for key in range(SEED_KEYS)]
        self.centre_count = np.array([len(run) for run in runs])
        self.centre_first = np.cumsum(self.centre_count) - self.centre_count
        self.centre_starts = np.concatenate(runs)
        keys = np.repeat(np.arange(SEED_KEYS), self.centre_count)
        self.centre_inside = self.first_paddle_fits(self.centre_starts, keys)

    def first_paddle_fits(self, starts: np.ndarray, keys: np.ndarray) -> np.ndarray:
        """Whether first paddles from ``starts`` (..., 2) with ``keys`` (...) have their end and
        pivot in the image: (...) bool."""
        ends = np.ceil(starts + self.head[keys]).astype(np.intp)
        return self.in_image(ends) & self.in_image(self.first_pivots(starts, keys))

    def first_pivots(self, starts: np.ndarray, keys: np.ndarray) -> np.ndarray:
        """The pivots (..., 2) of first paddles from ``starts`` (..., 2) with ``keys`` (...)."""
        ends = np.ceil(starts + self.head[keys]).astype(np.intp)
        return np.ceil(ends + self.back[keys]).astype(np.intp)

    def index(self, points: np.ndarray) -> np.ndarray:
        """Image pixels (..., 2) (row, col) as flat canvas indices (...)."""
        return points @ self.stride + self.origin

    def point(self, index: int) -> tuple[int, int]:
        row, col = divmod(int(index), self.width)
        return row - self.pad, col - self.pad

    def in_image(self, points: np.ndarray) -> np.ndarray:
        """Whether each of ``points`` (..., 2) is an image pixel: (...) bool."""
        return ((points >= 0) & (points < self.size)).all(axis=-1)


def blocked(kernel: np.ndarray, size: int) -> bool:
    """Whether a first paddle with seed kernel ``kernel`` (k, 2) can never start a snake on a
    ``size``-pixel image, as in the original: there, seeding dilates the (float) occupancy mask
    with the kernel using OpenCV's ``cv2.dilate``, which pads a float image with -DBL_MAX
    (``createMorphologyFilter``, imgproc/src/morph.cpp), so an image pixel whose kernel lies wholly
    outside the image comes out negative; the original's ``find_available_coordinates`` answers
    "no free start" for any mask with a negative value, and the seed fails at once. That happens
    when the kernel's offsets all leave the image from some corner (they sit one pixel off the
    paddle, so for many angles all point down or right)."""
    rows = np.arange(size)[:, None, None] + kernel[:, 0]  # (size, 1, k)
    cols = np.arange(size)[None, :, None] + kernel[:, 1]  # (1, size, k)
    inside = (rows >= 0) & (rows < size) & (cols >= 0) & (cols < size)
    return bool((~inside.any(axis=2)).any())


def _pad_row(values: np.ndarray, length: int) -> np.ndarray:
    return np.concatenate([values, np.repeat(values[-1:], length - len(values))])


def _table(rows: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Rows of (offsets (m_i,), values (m_i,)) as two (m, K) arrays, a column per row, padded by
    repeating its last entry (which changes neither a maximum nor a write)."""
    longest = max(len(offsets) for offsets, _ in rows)
    offsets = np.array([_pad_row(row_offsets, longest) for row_offsets, _ in rows]).T
    return np.ascontiguousarray(offsets), np.array([_pad_row(values, longest) for _, values in rows]).T.copy()


@functools.lru_cache(maxsize=16)
def layout(settings: Settings, margin: int) -> Layout:
    return Layout(settings, margin)


def starts(mask: np.ndarray, layout: Layout, paddle: Paddle, band: int) -> np.ndarray:
    """Image pixels (n, 2) (row, col) where a snake may start with ``paddle``, given the occupancy
    ``mask`` (W, W): every pixel at its seed kernel's offsets that is in the image (the others do
    not count, as in the original's dilation) is free and out of the ``band`` along the edges."""
    size, pad = layout.size, layout.pad
    taken = np.zeros(mask.shape, dtype=bool)
    inner = taken[layout.inner]
    inner |= mask[layout.inner] > FREE
    if band:
        inner[:band], inner[-band:], inner[:, :band], inner[:, -band:] = True, True, True, True
    blocked = np.zeros((size, size), dtype=bool)
    for row, col in paddle.seed_kernel + pad:
        blocked |= taken[row : row + size, col : col + size]
    return np.argwhere(~blocked)
