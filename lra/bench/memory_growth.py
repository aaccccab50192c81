"""How fast an attention's memory grows with the length: the exponent k of ``memory ∝ n^k`` between
the shortest and the longest length it was measured at, beside the exponent that ``n log n`` has
over the same span (the bound every efficient attention and mixer must keep: linear times log); per
attention of the efficiency rows, as a table of the page."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lra.provenance import markdown_table

if TYPE_CHECKING:
    from lra.bench.efficiency_measure import Measurement

GROWTH_TITLE = (
    "Memory growth exponent k (peak memory ∝ nᵏ from the shortest to the longest length with a figure; "
    "n log n has k a little above 1 over the same span; linear: 1, quadratic: 2):"
)


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
        span = math.log(self.long / self.short)
        return math.log(self.long * math.log(self.long) / (self.short * math.log(self.short))) / span

    @property
    def within_n_log_n(self) -> bool:
        return self.exponent <= self.n_log_n_exponent


def growth(points: Sequence[tuple[int, float]]) -> Growth | None:
    """The growth from the shortest to the longest of ``points`` (length, memory > 0), or None when
    fewer than two lengths have a positive memory."""
    measured = sorted((n, memory) for n, memory in points if memory > 0 and n > 1)  # log n > 0
    if len(measured) < 2 or measured[0][0] == measured[-1][0]:
        return None
    (short, first), (long, last) = measured[0], measured[-1]
    return Growth(short, long, first, last)


def growth_table(rows: Sequence[Measurement]) -> str:
    """Markdown: per attention, the span of its ``ok`` rows, its exponent, n log n's over that span and
    whether it is within (or grew faster, flagged)."""
    body = []
    for name in dict.fromkeys(row.attention for row in rows):
        g = growth([(r.seq_len, r.peak_mem_mb) for r in rows if r.attention == name and r.status == "ok"])
        if g is None:
            body.append([name, "—", "—", "—", "fewer than two lengths"])
        else:
            flag = "≤ n log n" if g.within_n_log_n else "**faster than n log n**"
            body.append([name, f"{g.short}→{g.long}", f"{g.exponent:.2f}", f"{g.n_log_n_exponent:.2f}", flag])
    return markdown_table(["attention", "lengths", "k", "n log n's k", "growth"], body)
