"""``python -m lra.bench train-speed``: how long a full harness training step takes per task × attention.

For each task at its real shape (batch size, sequence length, two documents for retrieval) and each
attention, the module of ``python -m lra task=T attention=A [--overrides ...]`` is built from the
composed Hydra config and trained on a random batch of that shape (``lra.bench.train_step``); the
median of ``--steps`` timed steps after ``--warmup`` untimed ones is projected to the config's
``trainer.max_steps`` (50k) and put beside the Skyformer paper's Table 2 (hours on one V100). CUDA:
bf16 autocast, synchronised timing, ``max_memory_allocated``; CPU: 32-bit, wall time, peak RSS, few
steps by default (a step at these shapes takes seconds). Like the efficiency benchmark, each CPU
configuration runs in a fresh subprocess by default (``lra.bench.isolation``), so that one that runs
out of memory or time is a row (``oom``, ``timeout``), not a crash. Rows: ``lra.bench.train_speed_measure``;
files ``results/train_speed_<device>.{csv,md}``: ``lra.bench.train_speed_output``.

``python -m lra.bench.train_speed CONFIG_JSON [--mem-limit-mb N]`` is the worker that measures one
configuration in such a subprocess.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import attention_zoo
from lra.bench.isolation import add_isolation_arguments, runner, settle_isolation, worker_main
from lra.bench.timing import default_device
from lra.bench.train_speed_measure import (
    WORKER,
    TrainSpeedConfig,
    format_progress,
    measure,
    measure_as_json,
    measure_in_subprocess,
)
from lra.bench.train_speed_output import write_markdown, write_rows
from lra.report.provenance import machine_description, rerun_command
from lra.report.published import TASKS

# device type -> (timed steps, warm-up steps) when --steps / --warmup are not given
DEFAULT_STEPS = {"cpu": (3, 1), "cuda": (20, 5)}


def configure(parser: argparse.ArgumentParser) -> Callable[[argparse.Namespace, Sequence[str]], None]:
    """Arguments of ``python -m lra.bench train-speed``."""
    parser.add_argument("--tasks", nargs="+", default=list(TASKS))
    parser.add_argument("--attentions", nargs="+", default=None, help="default: every registered attention")
    parser.add_argument("--steps", type=int, default=None, help="timed steps (default: 3 on CPU, 20 on CUDA)")
    parser.add_argument(
        "--warmup", type=int, default=None, help="untimed steps first (default: 1 CPU, 5 CUDA)"
    )
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    parser.add_argument(
        "--overrides",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        help="extra Hydra overrides of every configuration, as `python -m lra` takes them "
        "(e.g. experiment=skyformer features=128 task.seq_len=256)",
    )
    add_isolation_arguments(parser, timeout_s=900)
    parser.add_argument("--out", type=Path, default=Path("results"))
    return run


def run(args: argparse.Namespace, argv: Sequence[str]) -> None:
    device = default_device(args.device)
    machine = machine_description(device)  # before any measurement changes torch's thread count
    steps, warmup = DEFAULT_STEPS[device.type]
    args.steps = steps if args.steps is None else args.steps
    args.warmup = warmup if args.warmup is None else args.warmup
    if args.steps < 1 or args.warmup < 0:
        raise ValueError(f"--steps must be >= 1 and --warmup >= 0, got {args.steps} and {args.warmup}")
    configs = [
        TrainSpeedConfig(
            task, attention, tuple(args.overrides), str(device), args.warmup, args.steps, args.threads
        )
        for task in args.tasks
        for attention in args.attentions or attention_zoo.available()
    ]
    for config in configs:  # a bad task, attention or override is a usage error before anything runs
        config.compose_checked()
    settle_isolation(args, device)
    run_one = runner(args, measure, measure_in_subprocess)
    rows = []
    for config in configs:
        rows.append(run_one(config))
        print(format_progress(rows[-1]), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    write_rows(args.out / f"train_speed_{device.type}.csv", rows)
    command = rerun_command("lra.bench", ["train-speed", *argv])
    write_markdown(args.out / f"train_speed_{device.type}.md", rows, args, device, machine, command)
    print(f"wrote {args.out}/train_speed_{device.type}.{{csv,md}}")


if __name__ == "__main__":
    worker_main(sys.argv[1:], WORKER, measure_as_json)
