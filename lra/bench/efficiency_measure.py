"""Measuring the efficiency benchmark's configurations: one in this process or in a worker subprocess,
and a sweep over lengths that skips the longer lengths of an attention once it failed or got too slow.

Every configuration gives one ``Measurement`` with status ``ok``, ``oom``, ``timeout``, ``error`` or
``skipped`` (a longer sequence of an attention that already failed at a shorter one, or whose step
there took over ``max_step_s``, is not attempted).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from functools import partial
from typing import Any

import torch

from lra.bench.efficiency_workloads import BenchConfig, primed_step
from lra.bench.isolation import run_isolated
from lra.bench.timing import Failure, measure_step

WORKER = "lra.bench.efficiency"  # python -m lra.bench.efficiency CONFIG_JSON: measure_as_json


@dataclass(frozen=True)
class Measurement:
    """One row of results; ``detail`` (not in the CSV) says why a row is not ``ok``."""

    attention: str
    seq_len: int
    batch: int
    time_ms: float | None
    peak_mem_mb: float | None
    status: str
    scope: str = "layer"
    detail: str = ""
    timed_steps: int = 0

    @classmethod
    def failed(cls, config: BenchConfig, status: str, detail: str) -> Measurement:
        return cls(config.attention, config.seq_len, config.batch, None, None, status, config.scope, detail)


def measure(config: BenchConfig) -> Measurement:
    """Run ``config`` in this process: warm-up, then the median of up to ``repeats`` timed steps."""
    device = torch.device(config.device)
    timed = measure_step(
        partial(primed_step, config, device),
        device,
        warmup=config.warmup,
        repeats=config.repeats,
        budget_s=config.time_budget_s,
        threads=config.threads,
    )
    if isinstance(timed, Failure):
        return Measurement.failed(config, timed.status, timed.detail)
    return Measurement(
        config.attention,
        config.seq_len,
        config.batch,
        timed.median_ms,
        timed.peak_mb,
        "ok",
        config.scope,
        timed_steps=len(timed.times_ms),
    )


def measure_as_json(config: dict[str, Any]) -> dict[str, Any]:
    """``measure`` from and to JSON objects: the worker subprocess's job."""
    return asdict(measure(BenchConfig(**config)))


def measure_in_subprocess(config: BenchConfig, timeout_s: float, mem_limit_mb: int | None) -> Measurement:
    """Run ``config`` in a fresh interpreter (``python -m lra.bench.efficiency CONFIG_JSON``).

    A child killed by SIGKILL (the kernel's OOM killer) counts as ``oom``.
    """
    result = run_isolated(WORKER, asdict(config), timeout_s, mem_limit_mb)
    if isinstance(result, Failure):
        return Measurement.failed(config, result.status, result.detail)
    return Measurement(**result)


def sweep(
    configs: Sequence[BenchConfig],
    run_one: Callable[[BenchConfig], Measurement],
    max_step_s: float | None = None,
) -> list[Measurement]:
    """Measure every config in order (lengths ascending), printing each row.

    Once an (attention, scope) fails at some length, or one of its steps takes longer than
    ``max_step_s``, its longer configurations are recorded as ``skipped`` with the reason.
    """
    rows: list[Measurement] = []
    stopped: dict[tuple[str, str], str] = {}
    for config in configs:
        reason = stopped.get((config.scope, config.attention))
        if reason is not None:
            row = Measurement.failed(config, "skipped", reason)
        else:
            row = run_one(config)
            if row.status != "ok":
                stopped[(config.scope, config.attention)] = f"{row.status} at seq_len {row.seq_len}"
            elif max_step_s is not None and row.time_ms > 1000 * max_step_s:
                stopped[(config.scope, config.attention)] = (
                    f"a step took {row.time_ms / 1000:.1f} s at seq_len {row.seq_len} "
                    f"(over --max-step-s {max_step_s:g})"
                )
        rows.append(row)
        print(format_progress(row), flush=True)
    return rows


def format_progress(row: Measurement) -> str:
    figures = (
        f"{row.time_ms:10.1f} ms {row.peak_mem_mb:10.1f} MB ({row.timed_steps} timed)"
        if row.status == "ok"
        else f"{row.status.upper()} {row.detail}"
    )
    return f"[{row.scope:7}] {row.attention:10} n={row.seq_len:6} batch={row.batch}: {figures}"
