"""``python -m lra.bench efficiency``: time and peak memory of forward+backward against sequence length.

Each configuration (``lra.bench.efficiency_measure``: a workload, an attention, a length) is warmed up,
then timed ``--repeats`` times (fewer once the timed steps add up to ``--time-budget-s``); the median is
kept, and peak memory above a baseline taken after a priming step. By default every CPU configuration
runs in a fresh subprocess (``lra.bench.isolation``). Every configuration gives one ``Measurement``
with status ``ok``, ``oom``, ``timeout``, ``error``, ``skipped`` (``sweep``) or ``not registered``.
Page and plot: ``lra.bench.efficiency_tables``; ``--paper``: ``lra.bench.efficiency_paper``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from lra.bench import efficiency_paper, efficiency_tables
from lra.bench.baselines import bench_names
from lra.bench.efficiency_measure import WORKLOADS, BenchConfig, Measurement, format_progress, measure
from lra.bench.efficiency_paper import PAPER_TABLES, PaperRow
from lra.bench.efficiency_tables import CSV_COLUMNS, EfficiencySettings, csv_suffix
from lra.bench.isolation import Isolation, Runner, add_run_arguments
from lra.bench.output import Outputs
from lra.bench.timing import Failure

MEASUREMENT_FAILURES = ("oom", "timeout", "error")  # statuses after which longer lengths are skipped
HELP = "time and peak memory of forward+backward against sequence length"
DEFAULTS = {
    "lengths": (512, 1024, 2048, 4096, 8192, 16384), "scopes": ("layer", "encoder"), "batch": 1, "dim": 64,
    "heads": 2,
}  # fmt: skip


def sweep(
    configs: Sequence[BenchConfig],
    run_one: Callable[[BenchConfig], Measurement],
    max_step_s: float | None = None,
) -> list[Measurement]:
    """Measure every config in order (lengths ascending), printing each row.

    Once an (attention or label, scope) fails at some length (``MEASUREMENT_FAILURES``), or one of its
    steps takes longer than ``max_step_s``, its longer configurations are ``skipped`` with the reason.
    """
    stopped: dict[tuple[str, str], Failure] = {}

    def run_unless_stopped(config: BenchConfig) -> Measurement:
        if (config.scope, config.name) in stopped:
            return Measurement.failed(config, stopped[(config.scope, config.name)])
        row = run_one(config)
        if row.status in MEASUREMENT_FAILURES:
            stopped[(config.scope, config.name)] = Failure(
                "skipped", f"{row.status} at seq_len {row.seq_len}"
            )
        elif max_step_s is not None and row.time_ms > 1000 * max_step_s:
            took = f"a step took {row.time_ms / 1000:.1f} s at seq_len {row.seq_len}"
            stopped[(config.scope, config.name)] = Failure(
                "skipped", f"{took} (over --max-step-s {max_step_s:g})"
            )
        return row

    return Runner(run_unless_stopped, format_progress).run_all(configs)


def configure(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``python -m lra.bench efficiency``."""
    add = parser.add_argument
    add(
        "--paper",
        choices=sorted(PAPER_TABLES),
        default=None,
        help="measure a published table's own setting and rows (lra.bench.efficiency_paper)",
    )
    add("--attentions", nargs="+", default=None, help="default: every core and the naive baseline")
    add("--lengths", nargs="+", type=int, default=None, help=f"default: {DEFAULTS['lengths']}")
    add("--scopes", nargs="+", choices=sorted(WORKLOADS), default=None, help="default: layer encoder")
    for option in ("batch", "dim", "heads"):
        add(f"--{option}", type=int, default=None, help=f"default: {DEFAULTS[option]}")
    add("--warmup", type=int, default=1)
    add("--repeats", type=int, default=5)
    add(
        "--time-budget-s",
        type=float,
        default=30.0,
        help="stop repeating once the timed steps of a configuration add up to this (at least one is timed)",
    )
    add(
        "--max-step-s",
        type=float,
        default=None,
        help="skip the longer lengths of an attention once one of its steps took longer than this",
    )
    add_run_arguments(parser, timeout_s=300)
    add("--out", type=Path, default=Path("results"))


def settings_from(args: argparse.Namespace) -> EfficiencySettings:
    """The run's settings: those not given from ``--paper``'s table, else ``DEFAULTS``."""
    paper = PAPER_TABLES[args.paper] if args.paper else None
    if paper is not None and (args.attentions or args.scopes):
        raise ValueError(
            f"--paper {args.paper} measures its own rows and workload: drop --attentions/--scopes"
        )
    unknown = [name for name in args.attentions or [] if name not in bench_names()]
    if unknown:
        raise ValueError(f"unknown attention(s) {unknown}; valid: {', '.join(bench_names())}")
    given = {key: getattr(args, key) for key in DEFAULTS if getattr(args, key) is not None}
    chosen = {**DEFAULTS, **(paper.settings if paper else {}), **given}
    if chosen["dim"] % chosen["heads"]:
        raise ValueError(f"--dim ({chosen['dim']}) must be divisible by --heads ({chosen['heads']})")
    rows = paper.rows if paper else tuple(PaperRow("", name, {}) for name in args.attentions or bench_names())
    return EfficiencySettings(
        rows, tuple(sorted(chosen["lengths"])), tuple(chosen["scopes"]), chosen["batch"], chosen["dim"],
        chosen["heads"], args.warmup, args.repeats, args.time_budget_s, args.max_step_s,
        Isolation.from_args(args), args.out, paper,
    )  # fmt: skip


def configs(settings: EfficiencySettings, scope: str) -> list[BenchConfig]:
    """Every row of ``settings`` at each of its lengths, in ``scope``."""
    base = BenchConfig(
        "", 0, settings.batch, scope, settings.dim, settings.heads, settings.warmup, settings.repeats,
        str(settings.run.device), settings.run.threads, settings.time_budget_s,
    )  # fmt: skip
    return [
        replace(base, attention=row.attention, options=dict(row.options), label=row.label, seq_len=n)
        for row in settings.rows
        for n in settings.lengths
    ]


def run(settings: EfficiencySettings, argv: Sequence[str]) -> None:
    paper, device = settings.paper, settings.run.device
    outputs = Outputs.start(
        settings.out, paper.stem if paper else "efficiency", device, ["efficiency", *argv]
    )
    runner = settings.run.runner(measure, format_progress, Measurement.failed)

    def run_one(config: BenchConfig) -> Measurement:  # a row of a published table may not be registered
        if config.attention in bench_names():
            return runner(config)
        return Measurement.failed(
            config, Failure("not registered", f"no attention {config.attention!r} here")
        )

    rows_by_scope: dict[str, list[Measurement]] = {}
    for scope in settings.scopes:
        rows_by_scope[scope] = sweep(configs(settings, scope), run_one, settings.max_step_s)
        if not paper:  # each scope's CSV as soon as it is measured
            outputs.write_csv(CSV_COLUMNS, rows_by_scope[scope], csv_suffix(scope))
    if paper:
        [measured] = rows_by_scope.values()
        outputs.write_csv({"label": "", **CSV_COLUMNS}, measured)
        outputs.write_page(
            *efficiency_paper.page(paper, measured, device.type, [efficiency_tables.method_note(settings)])
        )
        outputs.announce("csv,md")
        return
    outputs.write_page(*efficiency_tables.page(rows_by_scope, settings))
    where = efficiency_tables.plot_where(settings)
    outputs.write_figure(efficiency_tables.efficiency_figure(rows_by_scope, where))
    outputs.announce("csv,md,png")
