"""How fast an attention's memory grows with the length: the exponent k of ``memory ∝ n^k`` between
the shortest and the longest length it was measured at, beside the exponent that ``n log n`` has
over the same span (the bound every efficient attention and mixer must keep: linear times log).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Growth:
    """Memory ``first`` at length ``short`` and ``last`` at ``long``: its exponent and the bound's."""

    short: int
    long: int
    first: float
    last: float

    @property
    def exponent(self) -> float:
        """k such that last / first = (long / short)^k."""
        return math.log(self.last / self.first) / math.log(self.long / self.short)

    @property
    def n_log_n_exponent(self) -> float:
        """The exponent of n log n over the same span (above 1, by less the longer the span)."""
        return math.log(self.long * math.log(self.long) / (self.short * math.log(self.short))) / math.log(
            self.long / self.short
        )

    @property
    def within_n_log_n(self) -> bool:
        return self.exponent <= self.n_log_n_exponent

    def verdict(self) -> str:
        """``≤ n log n``, or a flag saying the memory grew faster."""
        return "≤ n log n" if self.within_n_log_n else "**faster than n log n**"


def growth(points: Sequence[tuple[int, float]]) -> Growth | None:
    """The growth from the shortest to the longest of ``points`` (length, memory > 0), or None when
    fewer than two lengths have a positive memory."""
    measured = sorted((n, memory) for n, memory in points if memory > 0 and n > 1)  # log n > 0
    if len(measured) < 2 or measured[0][0] == measured[-1][0]:
        return None
    (short, first), (long, last) = measured[0], measured[-1]
    return Growth(short, long, first, last)
