"""The built-in Pathfinder generator: the procedure of the original one (``snakes2`` of Linsley et al.
2018, github drewlinsley/pathfinder, which made LRA's ``pathfinder32`` and Path-X), re-implemented
from its description and parameters, vectorised with numpy. ``_draw`` lists the steps of an image,
``generate_images`` where this generator differs from the original.

Labels alternate with the image index (exactly balanced) and each image has its own random
generator, ``image_rng(seed, index)``, so any image can be made again from ``(seed, index)``
alone, in any batch, by any number of worker processes. Closeness to the original's images:
``python -m data_prep pathfinder-stats`` (``results/pathfinder_stats.md``).
"""

from __future__ import annotations

import functools
import multiprocessing
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np

from data_prep.pathfinder.layout import SEED_KEYS, Layout, layout
from data_prep.pathfinder.settings import (
    CONTOUR_LENGTHS,
    MIN_RESOLUTION,
    Settings,
    check_options,
    settings_for,
)
from data_prep.pathfinder.shapes import draw_markers
from data_prep.pathfinder.snakes import (
    FIRST_BATCH,
    MAX_CELLS,
    Draws,
    Snake,
    distractors,
    main_pairs,
)

__all__ = [
    "CONTOUR_LENGTHS",
    "MIN_RESOLUTION",
    "PathfinderRecord",
    "check_options",
    "generate_chunks",
    "generate_image",
    "generate_range",
    "image_rng",
]
INK = 255
Job = TypeVar("Job")
Result = TypeVar("Result")


@dataclass
class PathfinderRecord:
    """What was drawn: ``markers`` (2, 2) int the marked path ends (row, col); ``contour_length``
    paddles per main path; ``margin`` the paddle margin drawn for this image; ``paths[i]``
    (num_paddles, 2, 2) each paddle's drawn line (start, end) as (row, col) image pixels (pixel
    centres at whole numbers), in path order, ``paths[0]`` and ``paths[1]`` the main paths."""

    markers: np.ndarray
    contour_length: int
    margin: int
    snakes: list[Snake] = field(repr=False)
    board: Layout = field(repr=False)

    @functools.cached_property
    def paths(self) -> list[np.ndarray]:
        return [segments(self.board, snake) for snake in self.snakes]


def render(layout: Layout, drawings: list[list[Snake]], contrasts: list[list[float]]) -> np.ndarray:
    """Each image's snakes (``drawings[i]``) drawn at their ``contrasts[i]`` and combined by
    maximum: intensity (I, R, R) float64 (paddle pixels as ``paddle_intensity`` makes them)."""
    parts = [
        (np.full(len(snake.starts), image), snake.starts, snake.keys, np.full(len(snake.starts), contrast))
        for image, (snakes, gains) in enumerate(zip(drawings, contrasts, strict=True))
        for snake, contrast in zip(snakes, gains, strict=True)
    ]
    owners, starts, keys, gains = (np.concatenate(column) for column in zip(*parts, strict=True))
    cells = layout.width**2
    canvas = np.zeros(len(drawings) * cells)
    pixels = owners * cells + starts + layout.line_offsets[:, keys]  # (l, P)
    np.maximum.at(canvas, pixels, paddle_intensity(layout.line_values[:, keys], gains))
    return canvas.reshape(len(drawings), layout.width, layout.width)[(slice(None), *layout.inner)]


def paddle_intensity(line_values: np.ndarray, contrasts: np.ndarray) -> np.ndarray:
    """Paddle pixels as the original made them: line values (float64 ``v / 255``) times their
    contrasts (broadcast), in float64, rounded to float32 (the original scaled a paddle's patch in
    float64 and copied it into a float32 image, ``Image.new('F')``). That rounding decides on
    which side of .5 some pixels land in the final byte-scaling (``to_bytes``)."""
    return (line_values * contrasts).astype(np.float32)


def to_bytes(intensity: np.ndarray) -> np.ndarray:
    """Each image of ``intensity`` (I, R, R) float byte-scaled by its own minimum and maximum, in
    the steps and float64 arithmetic of scipy's ``bytescale`` (which the original's
    ``scipy.misc.imsave`` applied before writing the PNG): ``(x - low) * (255 / (high - low))``,
    clipped to [0, 255], plus 0.5, truncated: (I, R, R) uint8."""
    low = intensity.min(axis=(1, 2), keepdims=True)
    spread = intensity.max(axis=(1, 2), keepdims=True) - low
    scale = INK / np.where(spread == 0, 1.0, spread)
    return (np.clip((intensity - low) * scale, 0, INK) + 0.5).astype(np.uint8)


def segments(board: Layout, snake: Snake) -> np.ndarray:
    """The drawn line of each paddle of ``snake``: float (K, 2, 2) (start, end) (row, col) image
    pixels, in path order (paddles added by extension are drawn from their head backwards)."""
    out = np.empty((len(snake.starts), 2, 2))
    for row, (start, key) in enumerate(zip(snake.starts, snake.keys, strict=True)):
        begin = np.array(board.point(start), dtype=float)
        ends = np.array([begin, begin + board.paddles[key].reach])
        out[row] = ends[::-1] if key >= SEED_KEYS else ends
    return out


def _draw(
    rngs: list[np.random.Generator], difficulty: str, settings: Settings, margin: int, labels: list[int]
) -> tuple[np.ndarray, list[PathfinderRecord]]:
    """The images (one per generator, all with paddle ``margin``) and their records.

    An image of R×R pixels (settings per size: ``settings``) is drawn as the original does:

    1. a paddle margin is drawn (from one value at 32 px, from 2 or 3 at 128);
    2. two *main snakes* of the difficulty's contour length (6 / 9 / 14 paddles) grow from two first
       paddles ``seed_distance`` apart near the middle, one paddle each in turn; a paddle is a short
       line drawn large and down-sampled (``shapes``); each next paddle turns from the last
       by an angle weighed by cos²(min(turn × continuity, 90°)) and must not overlap the occupancy mask
       of the paddles already placed (``snakes``); a pair that fails is drawn again;
    3. *distractor snakes* (contour length // 3 paddles, budget // that many of them) grow anywhere
       free, each dropped after 5 failed tries; as in the original, a snake whose first paddle's angle
       has a seed kernel that can leave the image fails that try at once (the original's OpenCV
       dilation pads float masks with -DBL_MAX, read as "no free start": ``Layout.seed_blocked``), so
       at 32×32 most of them are not placed;
    4. two marker discs go on path ends: label 1, the first paddle's start and the last paddle's head
       of one main snake; label 0, the first paddle's start of one and the last head of the other;
    5. main snakes are drawn at snake × paddle contrast, distractors at snake contrast (each paddle
       pixel rounded to float32, as the original's float32 canvas did), markers at 1, combined by
       maximum, and the image is byte-scaled by its own minimum and maximum in the steps of scipy's
       ``bytescale``, which the original's ``imsave`` applied (``to_bytes``); with the same float
       types in the same order, every grey level rounds as the original's.
    """
    board = layout(settings, margin)
    contour_length = CONTOUR_LENGTHS[difficulty]
    draws = Draws(rngs)
    masks, pairs = main_pairs(draws, board, contour_length)
    count, length = settings.distractor_snakes(contour_length), settings.distractor_length(contour_length)
    others = distractors(draws, board, masks, count, length)
    markers = np.empty((len(rngs), 2, 2), dtype=np.intp)
    for row, (rng, main, label) in enumerate(zip(rngs, pairs, labels, strict=True)):
        origin = int(rng.integers(2))
        terminal = origin if label == 1 else 1 - origin
        markers[row] = board.point(main[origin].starts[0]), board.point(main[terminal].starts[-1])
    drawings = [main + extra for main, extra in zip(pairs, others, strict=True)]
    contrasts = [[settings.main_contrast] * 2 + [settings.snake_contrast] * len(extra) for extra in others]
    intensity = render(board, drawings, contrasts)
    draw_markers(intensity, markers, settings)
    images = to_bytes(intensity)
    records = [
        PathfinderRecord(pair, contour_length, margin, drawing, board)
        for pair, drawing in zip(markers, drawings, strict=True)
    ]
    return images, records


def generate_images(
    rngs: list[np.random.Generator], difficulty: str, resolution: int, labels: list[int]
) -> tuple[np.ndarray, list[PathfinderRecord]]:
    """Images (n, R, R) uint8 and their records, image ``i`` drawn from ``rngs[i]`` alone with
    label ``labels[i]`` (0 or 1), whatever the other generators: grown together for speed.

    Where this generator differs from the original:

    - random numbers come from numpy's ``Generator`` per image, not the global legacy generator, so
      no image is the same as one of LRA's, only drawn the same way; several draws the original makes
      one after the other (the tries at a paddle, the pairs of main snakes) are made at once, which
      changes which numbers are used, not their distribution;
    - the anti-aliasing filter is today's Pillow Lanczos, called directly on 0/255 canvases: the
      original's ``imresize`` (removed from scipy) byte-scaled its drawings to exactly those before
      calling Pillow's Lanczos; the Pillow of 2018 that made LRA's sets may have rounded faint halo
      values differently (not checked);
    - the original tries main pairs forever; this one gives up with an error after
      ``PAIR_BATCHES`` batches (never reached at the LRA settings);
    - sizes other than LRA's 32, 64, 128 and 256 pixels use scaled settings (``settings``).
    """
    check_options(difficulty, resolution)
    if any(label not in (0, 1) for label in labels):
        raise ValueError(f"labels must be 0 or 1, got {sorted(set(labels) - {0, 1})}")
    settings = settings_for(resolution)
    margins = [settings.paddle_margins[int(rng.integers(len(settings.paddle_margins)))] for rng in rngs]
    images = np.empty((len(rngs), resolution, resolution), dtype=np.uint8)
    records: list[PathfinderRecord | None] = [None] * len(rngs)
    group = max(1, MAX_CELLS // (FIRST_BATCH * layout(settings, max(margins, default=1)).width ** 2))
    for margin in sorted(set(margins)):
        chosen = [index for index, drawn in enumerate(margins) if drawn == margin]
        for begin in range(0, len(chosen), group):
            part = chosen[begin : begin + group]
            part_rngs, part_labels = [rngs[i] for i in part], [labels[i] for i in part]
            images[part], made = _draw(part_rngs, difficulty, settings, margin, part_labels)
            for index, record in zip(part, made, strict=True):
                records[index] = record
    return images, records


def generate_image(
    rng: np.random.Generator, difficulty: str = "hard", resolution: int = 32, *, label: int | None = None
) -> tuple[np.ndarray, int, PathfinderRecord]:
    """One Pathfinder image: (image uint8 (R, R), label, record). ``label`` None draws it from ``rng``."""
    check_options(difficulty, resolution)
    if label is None:
        label = int(rng.integers(2))
    images, records = generate_images([rng], difficulty, resolution, [label])
    return images[0], label, records[0]


def image_rng(seed: int, index: int) -> np.random.Generator:
    """The random generator of image ``index`` of the set made with ``seed``."""
    return np.random.default_rng([seed, index])


def set_images(
    seed: int, start: int, stop: int, difficulty: str, resolution: int
) -> tuple[np.ndarray, np.ndarray, list[PathfinderRecord]]:
    """Images ``start..stop-1`` of the set made with ``seed``: images (n, R, R) uint8, labels (n,)
    int64 and records; image ``i`` has label ``i % 2`` and depends only on ``(seed, i)``."""
    labels = np.arange(start, stop, dtype=np.int64) % 2
    rngs = [image_rng(seed, index) for index in range(start, stop)]
    images, records = generate_images(rngs, difficulty, resolution, labels.tolist())
    return images, labels, records


def generate_range(
    seed: int, start: int, stop: int, difficulty: str, resolution: int
) -> tuple[np.ndarray, np.ndarray]:
    """Images ``start..stop-1`` of a set (``set_images``) as tokens (n, R*R) uint8 row-major pixels
    and labels (n,) int64."""
    images, labels, _ = set_images(seed, start, stop, difficulty, resolution)
    return images.reshape(len(labels), -1), labels


def _generate_chunk(job: tuple[int, int, int, str, int]) -> tuple[int, np.ndarray, np.ndarray]:
    seed, start, stop, difficulty, resolution = job
    return (start, *generate_range(seed, start, stop, difficulty, resolution))


def run_jobs(function: Callable[[Job], Result], jobs: list[Job], workers: int) -> Iterator[Result]:
    """``function`` applied to each of ``jobs``, in order, by ``workers`` processes (1: this one)."""
    if workers <= 1:
        yield from map(function, jobs)
        return
    with multiprocessing.Pool(workers) as pool:
        yield from pool.imap(function, jobs)


def generate_chunks(
    num: int, seed: int, difficulty: str, resolution: int, workers: int, chunk_size: int = 500
) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """Yield ``(start, tokens (n, R*R) uint8, labels (n,))`` covering images 0..num-1 in order,
    made by ``workers`` processes; the images do not depend on ``workers`` or ``chunk_size``."""
    check_options(difficulty, resolution)
    jobs = [
        (seed, start, min(start + chunk_size, num), difficulty, resolution)
        for start in range(0, num, chunk_size)
    ]
    yield from run_jobs(_generate_chunk, jobs, workers)
