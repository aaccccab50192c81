"""The Pathfinder generator's settings per image size: LRA's, and scaled ones for other sizes.

LRA made its Pathfinder sets with the original generator (``snakes2``, github drewlinsley/pathfinder)
at the settings its TFDS builders' docstrings record (google-research/long-range-arena,
``lra_benchmarks/data/pathfinder.py``), on top of the generator's defaults (paddle length 5,
padding 22, seed distance 27, paddle contrast 1, 3 tries per paddle, 5 per distractor snake).
``PRESETS`` holds those four sets of settings (32, 64, 128 = Path-X, 256 pixels); any other size
takes the nearest preset (by ratio) with every length scaled by the ratio of the sizes (whole
pixels, thickness in steps of 1 / antialias scale); counts, continuity and contrasts are kept.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass

# Paddles per main path for each difficulty (LRA's curv_baseline / curv_contour_length_9 / _14).
CONTOUR_LENGTHS = {"easy": 6, "intermediate": 9, "hard": 14}
MIN_RESOLUTION = 24  # the 32 settings scaled below this leave no room for the first seed
PADDLE_TRIES = 3  # the original's max_paddle_retrial (2) + 1
DISTRACTOR_TRIES = 5  # the original's max_distractor_contour_retrial (4) + 1


@dataclass(frozen=True)
class Settings:
    """What the original generator takes at one image size (``resolution`` pixels square).

    Lengths are in pixels of the image; ``antialias_scale`` is how much finer each shape is drawn
    before being down-sampled; ``paddle_margins``: one of them is drawn per image."""

    resolution: int
    padding: int  # border the occupancy mask covers from the start
    paddle_length: int
    paddle_thickness: float  # a multiple of 1 / antialias_scale
    paddle_margins: tuple[int, ...]  # gap kept around each paddle (and half the gap between paddles)
    marker_radius: float
    antialias_scale: int
    seed_distance: int  # between the first paddles of the two main paths
    continuity: float  # turns between paddles are weighted by cos²(min(turn * continuity, 90°))
    distractor_budget: int  # distractor snakes = budget // distractor length
    snake_contrast: float  # distractors' intensity; main paths: snake × paddle contrast
    paddle_contrast: float

    def distractor_length(self, contour_length: int) -> int:
        return contour_length // 3

    def distractor_snakes(self, contour_length: int) -> int:
        return self.distractor_budget // self.distractor_length(contour_length)

    @property
    def main_contrast(self) -> float:
        return self.snake_contrast * self.paddle_contrast


PRESETS = {
    32: Settings(32, 1, 2, 0.5, (1,), 1.5, 2, 7, 1.0, 20, 2.0, 0.75),
    64: Settings(64, 1, 5, 1.0, (1,), 2.5, 2, 12, 1.8, 22, 0.8, 1.0),
    128: Settings(128, 1, 5, 1.5, (2, 3), 3.0, 2, 20, 1.8, 35, 0.9, 1.0),
    256: Settings(256, 22, 5, 2.0, (3,), 5.0, 2, 27, 1.8, 30, 1.0, 1.0),
}


def check_options(difficulty: str, resolution: int) -> None:
    """``ValueError`` naming the valid choices when ``difficulty`` or ``resolution`` is not one."""
    if difficulty not in CONTOUR_LENGTHS:
        raise ValueError(f"difficulty must be one of {sorted(CONTOUR_LENGTHS)}, got {difficulty!r}")
    if not isinstance(resolution, int) or resolution < MIN_RESOLUTION:
        raise ValueError(
            f"resolution must be a whole number of pixels, at least {MIN_RESOLUTION} "
            f"(LRA's are {', '.join(map(str, PRESETS))}), got {resolution!r}"
        )


@functools.lru_cache(maxsize=32)
def settings_for(resolution: int) -> Settings:
    """LRA's settings at ``resolution``, or the nearest preset's scaled to it."""
    if resolution in PRESETS:
        return PRESETS[resolution]
    base = PRESETS[min(PRESETS, key=lambda size: abs(math.log(resolution / size)))]
    scale = resolution / base.resolution
    aa = base.antialias_scale

    def length(value: int) -> int:
        return max(1, round(value * scale))

    return dataclasses.replace(
        base,
        resolution=resolution,
        padding=length(base.padding),
        paddle_length=length(base.paddle_length),
        paddle_thickness=max(1, round(base.paddle_thickness * scale * aa)) / aa,
        paddle_margins=tuple(sorted({length(margin) for margin in base.paddle_margins})),
        marker_radius=base.marker_radius * scale,
        seed_distance=length(base.seed_distance),
    )
