"""``python -m lra.bench efficiency``: time and peak memory of forward+backward against sequence length.

Two workloads (``--scopes``, ``lra.bench.efficiency_workloads``): one attention layer, and the whole
encoder with a cross-entropy loss. Each configuration is warmed up, then timed ``--repeats`` times
(fewer once the timed steps add up to ``--time-budget-s``, at least once); the median is kept. Peak
memory is measured above a baseline taken after the model and inputs exist and after one short
priming step (``lra.bench.timing``: synchronised timing and ``max_memory_allocated`` on CUDA, peak RSS
on CPU). By default every CPU configuration runs in a fresh subprocess (``lra.bench.isolation``), so
no allocator cache from an earlier configuration shifts its memory, an address-space limit
(``--mem-limit-mb``) turns a too-large configuration into a recorded ``oom``, and a hung one is ended
by ``--timeout-s``. Rows, statuses and skipping: ``lra.bench.efficiency_measure``; files:
``lra.bench.efficiency_output``.

``python -m lra.bench.efficiency CONFIG_JSON [--mem-limit-mb N]`` is the worker that measures one
configuration in such a subprocess.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from lra.bench.baselines import bench_names
from lra.bench.efficiency_measure import (
    WORKER,
    Measurement,
    measure,
    measure_as_json,
    measure_in_subprocess,
    sweep,
)
from lra.bench.efficiency_output import csv_path, write_markdown, write_measurements, write_plot
from lra.bench.efficiency_workloads import WORKLOADS, BenchConfig
from lra.bench.isolation import add_isolation_arguments, runner, settle_isolation, worker_main
from lra.bench.timing import default_device
from lra.report.provenance import machine_description, rerun_command

DEFAULT_LENGTHS = (512, 1024, 2048, 4096, 8192, 16384)


def configure(parser: argparse.ArgumentParser) -> Callable[[argparse.Namespace, Sequence[str]], None]:
    """Arguments of ``python -m lra.bench efficiency``."""
    parser.add_argument(
        "--attentions", nargs="+", default=None, help="default: every core and the naive baseline"
    )
    parser.add_argument("--lengths", nargs="+", type=int, default=list(DEFAULT_LENGTHS))
    parser.add_argument("--scopes", nargs="+", choices=sorted(WORKLOADS), default=["layer", "encoder"])
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--heads", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
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
    add_isolation_arguments(parser, timeout_s=300)
    parser.add_argument("--out", type=Path, default=Path("results"))
    return run


def run(args: argparse.Namespace, argv: Sequence[str]) -> None:
    device = default_device(args.device)
    machine = machine_description(device)  # before any measurement changes torch's thread count
    valid = bench_names()
    attentions = args.attentions or valid
    unknown = [name for name in attentions if name not in valid]
    if unknown:
        raise ValueError(f"unknown attention(s) {unknown}; valid: {', '.join(valid)}")
    if args.dim % args.heads:
        raise ValueError(f"--dim ({args.dim}) must be divisible by --heads ({args.heads})")
    settle_isolation(args, device)
    run_one = runner(args, measure, measure_in_subprocess)
    args.lengths = sorted(args.lengths)
    base = BenchConfig(
        attention="",
        seq_len=0,
        batch=args.batch,
        dim=args.dim,
        heads=args.heads,
        warmup=args.warmup,
        repeats=args.repeats,
        device=str(device),
        threads=args.threads,
        time_budget_s=args.time_budget_s,
    )
    args.out.mkdir(parents=True, exist_ok=True)
    rows_by_scope: dict[str, list[Measurement]] = {}
    for scope in args.scopes:
        configs = [
            replace(base, attention=name, seq_len=n, scope=scope) for name in attentions for n in args.lengths
        ]
        rows_by_scope[scope] = sweep(configs, run_one, args.max_step_s)
        write_measurements(csv_path(args.out, device.type, scope), rows_by_scope[scope])
    command = rerun_command("lra.bench", ["efficiency", *argv])
    write_markdown(args.out / f"efficiency_{device.type}.md", rows_by_scope, args, device, machine, command)
    write_plot(args.out / f"efficiency_{device.type}.png", rows_by_scope)
    print(f"wrote {args.out}/efficiency_{device.type}.{{csv,md,png}}")


if __name__ == "__main__":
    worker_main(sys.argv[1:], WORKER, measure_as_json)
