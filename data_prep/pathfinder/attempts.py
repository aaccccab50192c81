"""The state the Pathfinder generator grows snakes in (``snakes``): attempts grown in
lockstep, the snakes they yield, and each image's own stream of random numbers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from data_prep.pathfinder.settings import PADDLE_TRIES

LAST_BATCH = 1024  # main pairs an image tries at once, at most
BUFFER = 4 * LAST_BATCH * PADDLE_TRIES  # random numbers an image draws at a time (>= any one request)

Generators = Sequence[np.random.Generator]


@dataclass
class Snake:
    """A drawn snake: its paddles' starts (K,) as flat canvas indices and keys (K,), in path order."""

    starts: np.ndarray
    keys: np.ndarray


@dataclass
class Attempts:
    """Attempts grown in lockstep, each at ``S`` snakes on its own occupancy mask: ``owners`` (B,)
    the image (index into the generators) of each, non-decreasing; ``masks`` (B, W * W);
    ``starts``, ``keys`` (B, S, K) of the paddles placed so far (``placed`` per snake), starts as
    flat canvas indices; ``pivots`` (B, S, 2) (row, col); ``live`` (A,) those not failed."""

    owners: np.ndarray
    masks: np.ndarray
    starts: np.ndarray
    keys: np.ndarray
    pivots: np.ndarray
    live: np.ndarray
    placed: int = 1

    @classmethod
    def start(cls, owners: np.ndarray, snakes: int, length: int, masks: np.ndarray) -> Attempts:
        """Attempts for ``owners`` (B,) at ``snakes`` snakes of ``length`` paddles on ``masks`` (B, W * W)."""
        count = len(owners)
        shape = (count, snakes, length)
        return cls(
            owners=owners,
            masks=masks,
            starts=np.zeros(shape, dtype=np.intp),
            keys=np.zeros(shape, dtype=np.intp),
            pivots=np.zeros((count, snakes, 2), dtype=np.intp),
            live=np.arange(count),
        )

    def snakes(self, attempt: int) -> list[Snake]:
        starts, keys = self.starts[attempt, :, : self.placed], self.keys[attempt, :, : self.placed]
        return [
            Snake(row_starts.copy(), row_keys.copy())
            for row_starts, row_keys in zip(starts, keys, strict=True)
        ]

    def first_live(self) -> tuple[np.ndarray, np.ndarray]:
        """The images that have a live attempt (i,) and the first such attempt of each (i,)."""
        owners, first = np.unique(self.owners[self.live], return_index=True)
        return owners, self.live[first]


class Draws:
    """Uniform random numbers in [0, 1) for attempts, each from its own image's generator: every
    image keeps a buffer of ``BUFFER`` numbers drawn from its generator, refilled when used up,
    so the numbers an image gets depend only on its generator and on what it asked for."""

    def __init__(self, rngs: Generators) -> None:
        self.rngs = rngs
        self.buffers = np.empty((len(rngs), BUFFER))
        self.used = np.full(len(rngs), BUFFER)

    def take(self, owners: np.ndarray, count: int) -> np.ndarray:
        """``count`` numbers per attempt (len(owners), count); ``owners`` (A,) non-decreasing."""
        first = np.searchsorted(owners, owners)  # where each owner's run of attempts begins
        wanted = np.bincount(owners, minlength=len(self.rngs)) * count
        for image in np.flatnonzero(self.used + wanted > BUFFER):
            self.buffers[image] = self.rngs[image].random(BUFFER)
            self.used[image] = 0
        columns = (self.used[owners] + (np.arange(len(owners)) - first) * count)[:, None] + np.arange(count)
        self.used += wanted
        return self.buffers[owners[:, None], columns]


def choose(draws: np.ndarray, counts: np.ndarray | int) -> np.ndarray:
    """Uniform whole numbers in [0, counts) from ``draws`` in [0, 1) (same shape; counts ≥ 1)."""
    return np.minimum((draws * counts).astype(np.intp), np.asarray(counts) - 1)
