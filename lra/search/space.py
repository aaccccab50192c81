"""A search's space: Hydra override strings (``hydra.sweeper.params``, then the command line) read with
Hydra's override parser and turned into Optuna distributions.

=====================================  ===========================================================
``key=choice(a, b, ...)``, ``a,b``     ``CategoricalDistribution([a, b, ...])``
``key=interval(a, b)``                 ``FloatDistribution(a, b)``: both ends included
``key=int(interval(a, b))``            ``IntDistribution(a, b)``: both ends included
``key=tag(log, ...interval...)``       the same with ``log=True``
``key=range(start, stop[, step])``     the values Hydra's range gives, ``stop`` excluded as in Python:
                                       ``IntDistribution`` (or ``FloatDistribution`` with ``step``)
                                       from the first to the last of them
``key=shuffle(range(...))``            ``CategoricalDistribution`` of those values
``key=value``                          fixed: not sampled, passed to every trial as written
=====================================  ===========================================================

A later override of a key replaces an earlier one. ``clip_to_task`` then narrows the budget options
whose useful values end at the task's sequence length (``SEQUENCE_BOUNDED``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from hydra.core.override_parser.types import ChoiceSweep, IntervalSweep, Override, RangeSweep, Transformer
from hydra.errors import HydraException
from omegaconf import DictConfig
from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)

import attention_zoo
from lra.config.errors import ConfigError
from lra.config.naming import parse

log = logging.getLogger(__name__)
LOG_TAG = "log"  # tag(log, interval(a, b)): sampled uniformly in log space
# Attentions whose budget option gains nothing past the sequence length, and why: the search clips
# their range there. Performer's random features approximate the kernel better as they grow, whatever
# the length: no limit.
SEQUENCE_BOUNDED = {
    "nystrom": "at most one landmark per position",
    "skyformer": "at most one landmark per position",
    "linformer": "a projection onto as many rows as positions compresses nothing",
    "informer": "from there on every query is selected: exact softmax attention",
}


def search_space(overrides: Sequence[str]) -> tuple[dict[str, BaseDistribution], dict[str, str]]:
    """``(distributions, fixed)`` of ``overrides``: each sweep override's key and its distribution, and
    each plain override (``key=value``, ``group=option``, ``+key=value``) as written, by its key."""
    space: dict[str, BaseDistribution] = {}
    fixed: dict[str, str] = {}
    for text in overrides:
        try:
            (override,) = parse([text])
        except HydraException as error:
            raise ConfigError(f"{text}: {error}".splitlines()[0]) from None
        key = override.key_or_group
        space.pop(key, None)
        fixed.pop(key, None)
        if override.is_sweep_override():
            space[key] = distribution(override)
        else:
            fixed[key] = text
    return space, fixed


def distribution(override: Override) -> BaseDistribution:
    """The Optuna distribution of one sweep override (the table of the module docstring)."""
    sweep = override.value()
    if not isinstance(sweep, ChoiceSweep | IntervalSweep | RangeSweep):
        raise ConfigError(
            f"{override.input_line}: a search samples choice, interval or range, not this sweep"
        )
    tags = set(sweep.tags)
    if tags - {LOG_TAG} or (tags and not isinstance(sweep, IntervalSweep)):
        raise ConfigError(
            f"{override.input_line}: a search reads one tag, log, on an interval: tag(log, interval(a, b))"
        )
    try:
        if isinstance(sweep, IntervalSweep):
            return interval_distribution(sweep.start, sweep.end, log=LOG_TAG in tags)
        values = list(override.sweep_iterator(transformer=Transformer.encode))
        if not values:
            raise ValueError("it gives no value")
        if isinstance(sweep, ChoiceSweep) or sweep.shuffle:
            return CategoricalDistribution(values)
        return range_distribution(values, abs(sweep.step))
    except ValueError as error:
        raise ConfigError(f"{override.input_line}: {error}".splitlines()[0]) from None


def interval_distribution(low: float, high: float, *, log: bool) -> BaseDistribution:
    """``int(interval(a, b))`` (both ends ints) samples integers, ``interval(a, b)`` floats."""
    if isinstance(low, int) and isinstance(high, int):
        return IntDistribution(low, high, log=log)
    return FloatDistribution(float(low), float(high), log=log)


def range_distribution(values: list[Any], step: float) -> BaseDistribution:
    """From the smallest to the largest of the values Hydra's range gave, ``step`` apart (a float
    range's largest value computed in decimal, as Hydra's own float steps drift: 0.30000000000000004)."""
    low = min(values)
    if all(isinstance(value, int) for value in values):
        return IntDistribution(low, max(values), step=int(step))
    last = Decimal(str(float(low))) + (len(values) - 1) * Decimal(str(float(step)))
    return FloatDistribution(float(low), float(last), step=float(step))


def clipped(distribution: BaseDistribution, limit: int) -> BaseDistribution:
    """``distribution`` with every value above ``limit`` replaced by ``limit`` (a range ends at the
    largest of its values that is at most ``limit``; one wholly above it becomes ``limit`` alone)."""
    if isinstance(distribution, CategoricalDistribution):
        numbers = all(isinstance(c, int | float) and not isinstance(c, bool) for c in distribution.choices)
        if not numbers:
            return distribution
        return CategoricalDistribution(list(dict.fromkeys(min(c, limit) for c in distribution.choices)))
    if isinstance(distribution, IntDistribution | FloatDistribution) and distribution.high > limit:
        step = distribution.step
        if distribution.low >= limit:
            return type(distribution)(limit, limit, log=distribution.log)
        high = limit if step is None else last_step_within(distribution.low, step, limit)
        return type(distribution)(distribution.low, high, log=distribution.log, step=step)
    return distribution


def last_step_within(low: float, step: float, limit: float) -> float:
    """The largest ``low + k·step`` (k ≥ 0) that is at most ``limit``, computed in decimal."""
    low_, step_ = Decimal(str(low)), Decimal(str(step))
    last = low_ + (Decimal(str(limit)) - low_) // step_ * step_
    return type(low)(last)


def clip_to_task(space: dict[str, BaseDistribution], cfg: DictConfig) -> dict[str, BaseDistribution]:
    """``space`` with the attention's budget option clipped to ``task.seq_len`` where the attention is
    in ``SEQUENCE_BOUNDED``; each narrowed range is logged."""
    attention = cfg.attention.name
    if attention not in SEQUENCE_BOUNDED:
        return space
    option = attention_zoo.spec(attention).budget_option
    key = f"attention.{option}"
    if key not in space:
        return space
    limit = cfg.task.seq_len
    narrowed = clipped(space[key], limit)
    if narrowed != space[key]:
        reason = SEQUENCE_BOUNDED[attention]
        log.info(
            f"{key}: {describe(space[key])} clipped to {describe(narrowed)} (task.seq_len={limit}: {reason})"
        )
    return {**space, key: narrowed}


def describe(distribution: BaseDistribution) -> str:
    """``choice(32, 64)`` or ``[32, 64]``: a distribution as a short text for the log."""
    if isinstance(distribution, CategoricalDistribution):
        return f"choice({', '.join(map(str, distribution.choices))})"
    step = "" if getattr(distribution, "step", None) in (None, 1) else f" step {distribution.step}"
    return f"[{distribution.low}, {distribution.high}]{step}{' log' if distribution.log else ''}"
