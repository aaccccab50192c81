"""95% confidence intervals over seeds (Student's t), for the report's accuracy cells and for
``python -m lra.report --compare A B``, the paired difference of two attentions over their shared seeds.

The interval of ``n`` values is mean ± t(n − 1) · s / √n, with s the sample standard deviation and
t(ν) the two-sided critical value of Student's t with ν degrees of freedom (``t_critical``: the
density integrated by Simpson's rule, the quantile found by bisection; no table, no SciPy).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from functools import lru_cache

LEVEL = 0.95
SIMPSON_STEPS = 2000  # even; the density is smooth, so the integral is exact to far below 1e-6


def t_density(t: float, df: int) -> float:
    """Student's t density with ``df`` degrees of freedom at ``t``."""
    log_norm = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    return math.exp(log_norm - (df + 1) / 2 * math.log1p(t * t / df))


def central_mass(t: float, df: int) -> float:
    """P(0 ≤ T ≤ t) by Simpson's rule."""
    h = t / SIMPSON_STEPS
    inner = sum((4 if i % 2 else 2) * t_density(i * h, df) for i in range(1, SIMPSON_STEPS))
    return h / 3 * (t_density(0.0, df) + inner + t_density(t, df))


@lru_cache(maxsize=64)
def t_critical(df: int, level: float = LEVEL) -> float:
    """The t with P(|T| ≤ t) = ``level`` for ``df`` degrees of freedom (12.71 for 1, 2.78 for 4)."""
    if df < 1:
        raise ValueError(f"a t interval needs at least 1 degree of freedom, got {df}")
    low, high = 0.0, 1.0
    while central_mass(high, df) < level / 2:
        low, high = high, 2 * high
    for _ in range(50):
        middle = (low + high) / 2
        low, high = (middle, high) if central_mass(middle, df) < level / 2 else (low, middle)
    return (low + high) / 2


def interval(values: Sequence[float], level: float = LEVEL) -> tuple[float, float] | None:
    """The ``level`` confidence interval of the mean of ``values``; None for fewer than two."""
    if len(values) < 2:
        return None
    mean = statistics.fmean(values)
    half = t_critical(len(values) - 1, level) * statistics.stdev(values) / math.sqrt(len(values))
    return mean - half, mean + half
