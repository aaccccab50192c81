"""``python -m lra.bench efficiency``: time and peak memory of forward+backward against sequence length.

Two workloads (``--scopes``, ``lra.bench.efficiency_workloads``): one attention layer, and the whole
encoder with a cross-entropy loss. Each configuration is warmed up, then timed ``--repeats`` times
(fewer once the timed steps add up to ``--time-budget-s``, at least once); the median is kept. Peak
memory is measured above a baseline taken after the model and inputs exist and after one short
priming step (``lra.bench.timing``: synchronised timing and ``max_memory_allocated`` on CUDA, peak RSS
on CPU). By default every CPU configuration runs in a fresh subprocess (``lra.bench.isolation``), so
no allocator cache from an earlier configuration shifts its memory, an address-space limit
(``--mem-limit-mb``) turns a too-large configuration into a recorded ``oom``, and a hung one is ended
by ``--timeout-s``. Every configuration gives one ``Measurement`` with status ``ok``, ``oom``,
``timeout``, ``error`` or ``skipped`` (``sweep``); tables and plot: ``lra.bench.efficiency_tables``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

import torch

from lra.bench import efficiency_paper
from lra.bench.baselines import bench_names
from lra.bench.efficiency_paper import PAPER_TABLES, PaperRow, PaperTable
from lra.bench.efficiency_tables import CSV_COLUMNS, csv_suffix, method_note, page, write_plot
from lra.bench.efficiency_workloads import WORKLOADS, BenchConfig, primed_step
from lra.bench.isolation import Runner, add_run_arguments, isolated_runner
from lra.bench.output import Outputs
from lra.bench.timing import Failure, default_device, measure_step

MEASUREMENT_FAILURES = ("oom", "timeout", "error")  # statuses after which longer lengths are skipped
HELP = "time and peak memory of forward+backward against sequence length"
DEFAULTS = {
    "lengths": (512, 1024, 2048, 4096, 8192, 16384), "scopes": ["layer", "encoder"], "batch": 1, "dim": 64,
    "heads": 2,
}  # fmt: skip


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
    label: str = ""  # the row's name where one attention is measured with several options

    @property
    def name(self) -> str:
        return self.label or self.attention

    @classmethod
    def failed(cls, config: BenchConfig, failure: Failure) -> Measurement:
        return cls(
            config.attention, config.seq_len, config.batch, None, None, failure.status, config.scope,
            failure.detail, label=config.label,
        )  # fmt: skip


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
        return Measurement.failed(config, timed)
    return Measurement(
        config.attention, config.seq_len, config.batch, timed.median_ms, timed.peak_mb, "ok", config.scope,
        timed_steps=len(timed.times_ms), label=config.label,
    )  # fmt: skip


def format_progress(row: Measurement) -> str:
    figures = (
        f"{row.time_ms:10.1f} ms {row.peak_mem_mb:10.1f} MB ({row.timed_steps} timed)"
        if row.status == "ok"
        else f"{row.status.upper()} {row.detail}"
    )
    return f"[{row.scope:7}] {row.name:10} n={row.seq_len:6} batch={row.batch}: {figures}"


def sweep(
    configs: Sequence[BenchConfig],
    run_one: Callable[[BenchConfig], Measurement],
    max_step_s: float | None = None,
) -> list[Measurement]:
    """Measure every config in order (lengths ascending), printing each row.

    Once an (attention or label, scope) fails at some length (``MEASUREMENT_FAILURES``), or one of
    its steps takes longer than ``max_step_s``, its longer configurations are recorded as ``skipped``
    with the reason.
    """
    stopped: dict[tuple[str, str], str] = {}

    def run_unless_stopped(config: BenchConfig) -> Measurement:
        reason = stopped.get((config.scope, config.name))
        if reason is not None:
            return Measurement.failed(config, Failure("skipped", reason))
        row = run_one(config)
        if row.status in MEASUREMENT_FAILURES:
            stopped[(config.scope, config.name)] = f"{row.status} at seq_len {row.seq_len}"
        elif max_step_s is not None and row.time_ms > 1000 * max_step_s:
            stopped[(config.scope, config.name)] = (
                f"a step took {row.time_ms / 1000:.1f} s at seq_len {row.seq_len} "
                f"(over --max-step-s {max_step_s:g})"
            )
        return row

    return Runner(run_unless_stopped, format_progress).run_all(configs)


def configure(parser: argparse.ArgumentParser) -> Callable[[argparse.Namespace, Sequence[str]], None]:
    """Arguments of ``python -m lra.bench efficiency``."""
    parser.add_argument(
        "--paper",
        choices=sorted(PAPER_TABLES),
        default=None,
        help="measure a published table's own setting and rows (lra.bench.efficiency_paper)",
    )
    parser.add_argument(
        "--attentions", nargs="+", default=None, help="default: every core and the naive baseline"
    )
    parser.add_argument(
        "--lengths", nargs="+", type=int, default=None, help=f"default: {DEFAULTS['lengths']}"
    )
    parser.add_argument(
        "--scopes", nargs="+", choices=sorted(WORKLOADS), default=None, help="default: layer encoder"
    )
    for option in ("batch", "dim", "heads"):
        parser.add_argument(f"--{option}", type=int, default=None, help=f"default: {DEFAULTS[option]}")
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--time-budget-s",
        type=float,
        default=30.0,
        help="stop repeating once the timed steps of a configuration add up to this (at least one is timed)",
    )
    parser.add_argument(
        "--max-step-s",
        type=float,
        default=None,
        help="skip the longer lengths of an attention once one of its steps took longer than this",
    )
    add_run_arguments(parser, timeout_s=300)
    parser.add_argument("--out", type=Path, default=Path("results"))
    return run


def settle(args: argparse.Namespace) -> PaperTable | None:
    """Fill the unset settings of ``args`` from ``--paper``'s table, else ``DEFAULTS``; the table."""
    paper = PAPER_TABLES[args.paper] if args.paper else None
    if paper is not None and (args.attentions or args.scopes):
        raise ValueError(
            f"--paper {args.paper} measures its own rows and workload: drop --attentions/--scopes"
        )
    for key, value in {**DEFAULTS, **(paper.settings if paper else {})}.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    args.lengths = sorted(args.lengths)
    if args.dim % args.heads:
        raise ValueError(f"--dim ({args.dim}) must be divisible by --heads ({args.heads})")
    return paper


def not_registered(run_one: Callable[[BenchConfig], Measurement]) -> Callable[[BenchConfig], Measurement]:
    """``run_one``, except for an attention that is not registered: a ``not registered`` row."""
    valid = bench_names()

    def run_if_registered(config: BenchConfig) -> Measurement:
        if config.attention in valid:
            return run_one(config)
        return Measurement.failed(
            config, Failure("not registered", f"no attention {config.attention!r} here")
        )

    return run_if_registered


def run(args: argparse.Namespace, argv: Sequence[str]) -> None:
    device = default_device(args.device)
    paper = settle(args)
    valid = bench_names()
    unknown = [name for name in args.attentions or [] if name not in valid]
    if unknown:
        raise ValueError(f"unknown attention(s) {unknown}; valid: {', '.join(valid)}")
    outputs = Outputs.start(args.out, paper.stem if paper else "efficiency", device, ["efficiency", *argv])
    run_one = not_registered(isolated_runner(args, device, measure, format_progress, Measurement.failed))
    settings = {key: getattr(args, key) for key in ("batch", "dim", "heads", "warmup", "repeats", "threads")}
    base = BenchConfig("", 0, **settings, device=str(device), time_budget_s=args.time_budget_s)
    rows = paper.rows if paper else [PaperRow("", name, {}) for name in args.attentions or valid]
    rows_by_scope: dict[str, list[Measurement]] = {}
    for scope in args.scopes:
        configs = [
            replace(
                base, attention=row.attention, options=row.options, label=row.label, seq_len=n, scope=scope
            )
            for row in rows
            for n in args.lengths
        ]
        rows_by_scope[scope] = sweep(configs, run_one, args.max_step_s)
        if not paper:
            outputs.write_csv(CSV_COLUMNS, rows_by_scope[scope], csv_suffix(scope))
    if paper:
        [measured] = rows_by_scope.values()
        outputs.write_csv({"label": "", **CSV_COLUMNS}, measured)
        outputs.write_page(*efficiency_paper.page(paper, measured, device.type, [method_note(args, device)]))
        outputs.announce("csv,md")
        return
    outputs.write_page(*page(rows_by_scope, args, device))
    write_plot(outputs, rows_by_scope, args, device)
    outputs.announce("csv,md,png")
