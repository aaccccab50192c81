"""Can a classifier tell the generator's Pathfinder images from reference images? A two-sample test.

Each image is described by its 16-bin grey-level histogram (the shares of its pixels in levels
0-15, 16-31, ...) and its ink shares (pixels > 0, pixels > 128). The same number of images from
each set are pooled, labelled by set, split 80/20 by a seeded permutation, and a logistic
regression (``logistic``) trained on the 80% labels the other 20%. Its accuracy is near 0.5 when
the sets cannot be told apart; the binomial standard deviation of an accuracy at 0.5 on that
many test images says how near is near. The grey levels whose shares differ most show what it
sees: for instance pixels that round to one level in one set and the next level in the other
(the pairs, e.g. 166/167, that float32 versus float64 arithmetic before the final rounding gives).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from data_prep.pathfinder.fidelity.logistic import predict

BINS = 16
LEVELS = 256
TRAIN_SHARE = 0.8
SPLIT_SEED = 0
BRIGHT = 128  # the second ink share counts pixels above this


@dataclass(frozen=True)
class TwoSample:
    """The test's outcome: ``accuracy`` on ``tested`` held-out images, ``chance_std`` the binomial
    standard deviation of an accuracy at 0.5 on that many, ``per_set`` images taken from each set."""

    accuracy: float
    chance_std: float
    tested: int
    per_set: int


def image_features(images: np.ndarray) -> np.ndarray:
    """The features (N, BINS + 2) of ``images`` (N, ...) uint8: the shares of their pixels in each
    of ``BINS`` equal bins of grey levels, then the shares of pixels > 0 and > ``BRIGHT``."""
    pixels = images.reshape(len(images), -1)
    histograms = level_counts(pixels // (LEVELS // BINS), BINS) / pixels.shape[1]
    return np.column_stack([histograms, (pixels > 0).mean(axis=1), (pixels > BRIGHT).mean(axis=1)])


def level_counts(values: np.ndarray, levels: int) -> np.ndarray:
    """How many of each row's ``values`` (N, P) ints in [0, ``levels``) take each value: (N, levels)."""
    rows = np.arange(len(values))[:, None] * levels
    return np.bincount((values + rows).ravel(), minlength=len(values) * levels).reshape(-1, levels)


def two_sample_test(ours: np.ndarray, reference: np.ndarray, seed: int = SPLIT_SEED) -> TwoSample:
    """The test (module docstring) on the first ``n`` images of ``ours`` and of ``reference``
    (each (N, R, R) uint8), ``n`` the smaller count; at least 10 of each."""
    per_set = min(len(ours), len(reference))
    if per_set < 10:
        raise ValueError(f"the two-sample test needs at least 10 images of each set, got {per_set}")
    features = image_features(np.concatenate([ours[:per_set], reference[:per_set]]))
    labels = np.repeat([0, 1], per_set)
    order = np.random.default_rng(seed).permutation(2 * per_set)
    cut = round(TRAIN_SHARE * 2 * per_set)
    train, test = order[:cut], order[cut:]
    predicted = predict(features[train], labels[train], features[test])
    return TwoSample(
        accuracy=float((predicted == labels[test]).mean()),
        chance_std=math.sqrt(0.25 / len(test)),
        tested=len(test),
        per_set=per_set,
    )


@dataclass(frozen=True)
class LevelShares:
    """Per grey level (each (256,)): the percentage of pixels at that level in each set, and the
    standard error of their difference (from the spread of the per-image shares)."""

    ours: np.ndarray
    reference: np.ndarray
    standard_error: np.ndarray

    @property
    def difference(self) -> np.ndarray:
        return self.ours - self.reference

    def largest(self, count: int) -> np.ndarray:
        """The ``count`` levels whose shares differ most, largest first."""
        return np.argsort(-np.abs(self.difference), kind="stable")[:count]


def level_shares(ours: np.ndarray, reference: np.ndarray) -> LevelShares:
    """The grey-level shares of ``ours`` and ``reference`` (each (N, R, R) uint8)."""
    per_image = [
        level_counts(images.reshape(len(images), -1).astype(np.intp), LEVELS) * 100 / images[0].size
        for images in (ours, reference)
    ]
    variance = sum(shares.var(axis=0) / len(shares) for shares in per_image)
    return LevelShares(per_image[0].mean(axis=0), per_image[1].mean(axis=0), np.sqrt(variance))


def report(ours: np.ndarray, reference: np.ndarray, rows: int = 8) -> list[str]:
    """Markdown lines: the two-sample test of ``ours`` against ``reference`` and the ``rows``
    grey levels whose shares differ most."""
    test = two_sample_test(ours, reference)
    shares = level_shares(ours, reference)
    lines = [
        f"Two-sample test against {len(reference)} reference images: a logistic regression on the "
        f"{BINS}-bin grey-level histogram and the shares > 0 and > {BRIGHT}, trained on a seeded "
        f"{TRAIN_SHARE:.0%} of {test.per_set} images of each set, labels the other {test.tested} "
        f"with accuracy **{test.accuracy:.3f}** (chance: 0.5 ± {test.chance_std:.3f}, the binomial "
        "standard deviation).",
        "",
        "| grey level | reference | ours | difference | its standard error |",
        "|---|---|---|---|---|",
    ]
    for level in shares.largest(rows):
        lines.append(
            f"| {level} | {shares.reference[level]:.3f}% | {shares.ours[level]:.3f}% "
            f"| {shares.difference[level]:+.3f} | {shares.standard_error[level]:.3f} |"
        )
    return [*lines, "", "(shares in percent of pixels; differences and standard errors in percentage points)"]
