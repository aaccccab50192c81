"""The shapes the Pathfinder generator draws: paddles and marker discs, anti-aliased as the original did.

Each shape is drawn with Pillow on a canvas ``antialias_scale`` (aa) times finer than the image and
down-sampled with Lanczos (``PaddleSet._draw``, ``marker``). These are the original generator's
shapes; only the resampling filter's implementation (today's Pillow, where the original went through
scipy's ``imresize``, itself Pillow) may differ in rounding. Everything a paddle needs is computed
once per angle and kept (``PaddleSet``).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageDraw

from data_prep.pathfinder.settings import Settings

FULL = 255


def _down_sample(canvas: np.ndarray, size: int) -> np.ndarray:
    """A uint8 (S, S) canvas resized to uint8 (size, size) with Pillow's Lanczos filter."""
    return np.asarray(Image.fromarray(canvas).resize((size, size), Image.Resampling.LANCZOS))


def disc_offsets(radius: float) -> np.ndarray:
    """Integer offsets (n, 2) (row, col) within ``radius`` of the origin."""
    reach = math.floor(radius)
    rows, cols = np.mgrid[-reach : reach + 1, -reach : reach + 1]
    inside = rows**2 + cols**2 <= radius**2
    return np.stack([rows[inside], cols[inside]], axis=1)


def _grow(binary: np.ndarray, radius: int) -> np.ndarray:
    """``binary`` (S, S) bool dilated by a disc of ``radius`` pixels (outside the canvas counts as empty)."""
    padded = np.pad(binary, radius)
    grown = np.zeros_like(binary)
    size = binary.shape[0]
    for row, col in disc_offsets(radius) + radius:
        grown |= padded[row : row + size, col : col + size]
    return grown


def flip(angle: float) -> float:
    """The opposite direction of ``angle`` (radians), kept in [-π, π] as the original does."""
    return angle + math.pi if angle < 0 else angle - math.pi


def step(point: tuple[int, int], angle: float, distance: float) -> tuple[int, int]:
    """``point`` (row, col) moved ``distance`` pixels along ``angle``, each coordinate rounded up."""
    return (
        math.ceil(point[0] + distance * math.sin(angle)),
        math.ceil(point[1] + distance * math.cos(angle)),
    )


@dataclass(frozen=True)
class Paddle:
    """One paddle: its ``mask`` patch (2H + 1, 2H + 1) in [0, 1] centred on its start; its line
    (intensity in [0, 1] before contrast) and mask as flat canvas offsets from the start of
    their nonzero pixels, ``line_offsets`` (l,), ``mask_offsets`` (m,), and the values there,
    ``line_values`` (l,), ``mask_values`` (m,); ``reach``
    (2,) the offset (row, col) of the line's far end from its start, in image pixels; and
    ``seed_kernel`` (k, 2) the offsets (row, col) from a candidate start of a snake's first paddle
    that must all be free to seed it there: the fully-on pixels of the mask, cropped and shifted
    by one pixel as the original's dilation kernel is (a window of 2(L + margin) + 1 pixels whose
    centre is one pixel before the paddle's start)."""

    mask: np.ndarray
    line_offsets: np.ndarray
    line_values: np.ndarray
    mask_offsets: np.ndarray
    mask_values: np.ndarray
    reach: np.ndarray
    seed_kernel: np.ndarray


class PaddleSet:
    """The paddles of one setting and margin, and the flat canvas they are placed on.

    The canvas is the image with ``pad`` pixels of margin on each side, ``width`` pixels wide,
    stored flat: pixel (row, col) of the image is ``(row + pad) * width + col + pad``.

    Paddles that start a snake point at a whole number of degrees (``seed_paddle``). Extending a
    snake moves from its *pivot* (``margin`` past the last paddle's end) by ``length + margin`` to
    a new head: the candidate heads are the pixels hit by rays at each arc step of one pixel around
    the circle, ``steps`` (n, 2) offsets (row, col) (``step_offsets`` (n,) flat), whose paddles
    ``step_paddles`` are drawn from the head back towards the pivot (``step_angles`` (n,): the
    direction pivot -> head). ``near`` (m,) flat offsets within ``margin`` of a pixel."""

    def __init__(self, settings: Settings, margin: int) -> None:
        self.length = settings.paddle_length
        self.margin = margin
        self.aa = settings.antialias_scale
        self.thickness = round(settings.paddle_thickness * self.aa)
        self.half = self.length + math.ceil(settings.paddle_thickness) + margin
        self.size = 2 * self.half + 1
        self.pad = max(self.half, self.length + 2 * margin) + margin + 2  # room around any pivot
        self.width = settings.resolution + 2 * self.pad
        self._seed_paddles: dict[int, Paddle] = {}
        radius = self.length + margin
        arc = np.arange(0.0, 360.0, 360.0 / (2 * radius * math.pi)) * math.pi / 180
        offsets = np.floor(radius * np.stack([np.sin(arc), np.cos(arc)], axis=1)).astype(np.intp)
        self.steps = np.unique(offsets, axis=0)
        self.step_offsets = self.flat(self.steps)
        self.step_angles = np.arctan2(self.steps[:, 0], self.steps[:, 1])
        self.step_paddles = [self._draw(flip(float(angle))) for angle in self.step_angles]
        self.near = self.flat(disc_offsets(margin))

    def flat(self, offsets: np.ndarray) -> np.ndarray:
        """Offsets (..., 2) (row, col) as flat canvas offsets (...)."""
        return offsets[..., 0] * self.width + offsets[..., 1]

    def seed_paddle(self, degrees: int) -> Paddle:
        """The paddle pointing at a whole number of ``degrees`` from its start (cached)."""
        found = self._seed_paddles.get(degrees)
        if found is None:
            found = self._seed_paddles[degrees] = self._draw(degrees * math.pi / 180)
        return found

    def _draw(self, angle: float) -> Paddle:
        """The paddle pointing at ``angle`` (radians; row = sin, column = cos) from its start.

        A paddle of length L and thickness T is a line drawn from the centre of a blank square canvas
        aa times finer than the image, ``round(T * aa)`` pixels wide, to the centre plus ``L * aa``
        along the angle (rounded up), then down-sampled into a patch of ``2H + 1`` pixels,
        ``H = L + ⌈T⌉ + margin``, centred on the paddle's start. Its *mask* is the same line grown by a
        disc of radius ``margin * aa`` and down-sampled the same way: values in [0, 1] that say how
        much of the paddle's surroundings it takes."""
        big = 2 * self.half * self.aa + 1
        centre = self.half * self.aa
        head = step((centre, centre), angle, self.length * self.aa)
        canvas = Image.new("L", (big, big), 0)
        ImageDraw.Draw(canvas).line([(centre, centre), (head[1], head[0])], fill=FULL, width=self.thickness)
        line = np.asarray(canvas)
        grown = np.where(_grow(line > 0, self.margin * self.aa), FULL, 0).astype(np.uint8)
        mask = _down_sample(grown, self.size)
        values = (mask / FULL).astype(np.float32).astype(np.float64)  # the original kept masks in float32
        reach = self.length + self.margin
        first = self.half - reach - 1
        kernel = mask[first : first + 2 * reach + 1, first : first + 2 * reach + 1] == FULL
        drawn = _down_sample(line, self.size) / FULL
        return Paddle(
            mask=values,
            line_offsets=self.flat(np.argwhere(drawn > 0) - self.half),
            line_values=drawn[drawn > 0],
            mask_offsets=self.flat(np.argwhere(mask > 0) - self.half),
            mask_values=values[mask > 0],
            reach=(np.array(head) - centre) * self.size / big,
            seed_kernel=np.argwhere(kernel) - reach,
        )


@functools.lru_cache(maxsize=16)
def paddle_set(settings: Settings, margin: int) -> PaddleSet:
    return PaddleSet(settings, margin)


@functools.lru_cache(maxsize=1 << 16)
def marker(settings: Settings, row: int, col: int) -> tuple[int, int, np.ndarray]:
    """The marker disc centred on image pixel (``row``, ``col``), of radius ``marker_radius * aa`` on an
    image-sized canvas aa times finer, down-sampled to the image: (top, left, patch) with the patch
    (h, w) float in [0, 1] the disc's nonzero bounding box, which starts at pixel (top, left) (cached:
    a marker only depends on its place)."""
    aa, size = settings.antialias_scale, settings.resolution
    rows = np.arange(size * aa)
    distance2 = (rows[:, None] - row * aa) ** 2 + (rows[None, :] - col * aa) ** 2
    disc = np.where(distance2 <= (settings.marker_radius * aa) ** 2, FULL, 0).astype(np.uint8)
    image = _down_sample(disc, size)
    lit_rows, lit_cols = np.flatnonzero(image.any(axis=1)), np.flatnonzero(image.any(axis=0))
    top, left = int(lit_rows[0]), int(lit_cols[0])
    return top, left, image[top : lit_rows[-1] + 1, left : lit_cols[-1] + 1] / FULL


def draw_markers(images: np.ndarray, tips: np.ndarray, settings: Settings) -> None:
    """Combine by maximum into ``images`` (I, R, R) float each image's two marker discs centred on
    ``tips`` (I, 2, 2) int (row, col), each down-sampled on its own canvas, as the original did."""
    for image, pair in zip(images, tips, strict=True):
        for row, col in pair:
            top, left, patch = marker(settings, int(row), int(col))
            window = image[top : top + patch.shape[0], left : left + patch.shape[1]]
            np.maximum(window, patch, out=window)
