"""``python -m lra.bench train-speed``: how long a full harness training step takes per task × attention.

For each task at its real shape (batch size, sequence length, two documents for retrieval) and each
attention, the module of ``python -m lra task=T attention=A [--overrides ...]`` is built from the
composed Hydra config and trained on a random batch of that shape (``lra.bench.train_step``); the
median of ``--steps`` timed steps after ``--warmup`` untimed ones is projected to the config's
``trainer.max_steps`` (50k) and put beside the Skyformer paper's Table 2 (hours on one V100). CUDA:
synchronised timing, ``max_memory_allocated``; CPU: wall time, peak RSS, few steps by default (a step
at these shapes takes seconds). Like the efficiency benchmark, each CPU configuration runs in a fresh
subprocess by default (``lra.bench.isolation``), so that one that runs out of memory or time is a row
(``oom``, ``timeout``), not a crash; its C heap is set up as the training job sets its own
(``steady_heap``). Table and page: ``lra.bench.train_speed_table``.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import torch
from hydra.errors import HydraException
from omegaconf import DictConfig
from omegaconf.errors import OmegaConfBaseException

import attention_zoo
from lra.bench.isolation import add_run_arguments, isolated_runner
from lra.bench.output import Outputs
from lra.bench.timing import Failure, StepTimes, default_device, measure_step
from lra.bench.train_speed_table import CSV_COLUMNS, page, paper_hours
from lra.bench.train_step import HarnessStep, documents, job_config, precision
from lra.checks import check_config
from lra.memory import keep_freed_heap
from lra.published_numbers import TASKS

HELP = "median full training step per task × attention, projected to a run, beside Skyformer Table 2"
# device type -> (timed steps, warm-up steps) when --steps / --warmup are not given
DEFAULT_STEPS = {"cpu": (3, 1), "cuda": (20, 5)}


@dataclass(frozen=True)
class TrainSpeedConfig:
    """One measured configuration: ``python -m lra task=TASK attention=ATTENTION OVERRIDES``, timed."""

    task: str
    attention: str
    overrides: tuple[str, ...] = ()
    device: str = "cpu"
    warmup: int = 1
    steps: int = 3
    threads: int | None = None

    def compose(self) -> DictConfig:
        """The composed job config (``lra.bench.train_step.job_config``) of a run on ``device``: the
        trainer's accelerator is the device's (``cpu`` or ``gpu``, so that its default precision is
        the one such a run gets) unless an override sets it."""
        accelerator = "gpu" if torch.device(self.device).type == "cuda" else "cpu"
        return job_config(self.task, self.attention, [f"trainer.accelerator={accelerator}", *self.overrides])

    def compose_checked(self) -> DictConfig:
        """``compose`` after the harness's own checks; a ``ValueError`` says what is wrong."""
        try:
            cfg = self.compose()
        except (HydraException, OmegaConfBaseException) as error:
            message = str(error).split("\nConfig search path")[0]  # Hydra appends its search path
            raise ValueError(f"task={self.task} attention={self.attention}: {message}") from None
        check_config(cfg)  # a ConfigError (a ValueError) naming the key
        precision(cfg, torch.device(self.device))  # a ValueError for a precision not measured here
        return cfg


@dataclass(frozen=True)
class TrainSpeedRow:
    """One CSV row; ``run_steps`` is the config's ``trainer.max_steps``, the run the projection is for."""

    task: str
    attention: str
    batch: int
    seq_len: int
    documents: int
    run_steps: int
    step_ms: float | None
    peak_mem_mb: float | None
    status: str
    detail: str = ""
    timed_steps: int = 0
    load_1min: float | None = None  # the machine's load average when the measurement started
    precision: str = ""  # the config's trainer.precision, which the step ran under

    @property
    def samples_per_s(self) -> float | None:
        """Examples (pairs of documents for retrieval) per second at the median step."""
        return None if self.step_ms is None else 1000 * self.batch / self.step_ms

    @property
    def projected_hours(self) -> float | None:
        """The median step × ``run_steps``, in hours (training steps only: no evaluation, no data loading)."""
        return None if self.step_ms is None else self.step_ms * self.run_steps / 3_600_000

    @property
    def paper_hours(self) -> float | None:
        """Skyformer Table 2's hours for this task × attention (whole run, one V100), where it has them."""
        return paper_hours(self.attention, self.task)


def row_for(
    config: TrainSpeedConfig, cfg: DictConfig, result: StepTimes | Failure, load_1min: float
) -> TrainSpeedRow:
    """The row of ``config`` (its shape from the composed ``cfg``) with ``result``'s figures or failure."""
    shape = (config.task, config.attention, cfg.task.batch_size, cfg.task.seq_len, documents(cfg.task))
    notes = {"load_1min": load_1min, "precision": str(cfg.trainer.precision)}
    if isinstance(result, Failure):
        return TrainSpeedRow(*shape, cfg.trainer.max_steps, None, None, result.status, result.detail, **notes)
    return TrainSpeedRow(
        *shape, cfg.trainer.max_steps, result.median_ms, result.peak_mb, "ok",
        timed_steps=len(result.times_ms), **notes,
    )  # fmt: skip


def measure(config: TrainSpeedConfig) -> TrainSpeedRow:
    """Build ``config``'s module, run ``warmup`` steps, then the median of ``steps`` timed ones."""
    load_1min = os.getloadavg()[0]
    device = torch.device(config.device)
    cfg = config.compose()
    if cfg.steady_heap:  # as the training job sets its process up
        keep_freed_heap()
    result = measure_step(
        partial(HarnessStep.build, cfg, device),
        device,
        warmup=config.warmup,
        repeats=config.steps,
        threads=config.threads,
    )
    return row_for(config, cfg, result, load_1min)


def failed(config: TrainSpeedConfig, failure: Failure) -> TrainSpeedRow:
    """The row of a configuration whose subprocess gave no result; its load is the one at its end."""
    return row_for(config, config.compose(), failure, os.getloadavg()[0])


def format_progress(row: TrainSpeedRow) -> str:
    figures = (
        f"{row.step_ms:9.1f} ms/step {row.samples_per_s:8.1f} samples/s {row.projected_hours:8.2f} h "
        f"{row.peak_mem_mb:9.1f} MB ({row.timed_steps} timed)"
        if row.status == "ok"
        else f"{row.status.upper()} {row.detail}"
    )
    where = f"[{row.task:10}] {row.attention:10} batch={row.batch} n={row.seq_len}×{row.documents}"
    return f"{where}, load {row.load_1min:.1f}: {figures}"


def configure(parser: argparse.ArgumentParser) -> Callable[[argparse.Namespace, Sequence[str]], None]:
    """Arguments of ``python -m lra.bench train-speed``."""
    parser.add_argument("--tasks", nargs="+", default=list(TASKS))
    parser.add_argument("--attentions", nargs="+", default=None, help="default: every registered attention")
    parser.add_argument("--steps", type=int, default=None, help="timed steps (default: 3 on CPU, 20 on CUDA)")
    parser.add_argument(
        "--warmup", type=int, default=None, help="untimed steps first (default: 1 CPU, 5 CUDA)"
    )
    parser.add_argument(
        "--overrides",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        help="extra Hydra overrides of every configuration, as `python -m lra` takes them "
        "(e.g. experiment=skyformer features=128 task.seq_len=256)",
    )
    add_run_arguments(parser, timeout_s=900)
    parser.add_argument("--out", type=Path, default=Path("results"))
    return run


def run(args: argparse.Namespace, argv: Sequence[str]) -> None:
    device = default_device(args.device)
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
    outputs = Outputs.start(args.out, "train_speed", device, ["train-speed", *argv])
    rows = isolated_runner(args, device, measure, format_progress, failed).run_all(configs)
    outputs.write_csv(CSV_COLUMNS, rows)
    outputs.write_page(*page(rows, args, device))
    outputs.announce("csv,md")
