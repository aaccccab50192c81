"""``python -m lra.bench train-speed``: how long a full harness training step takes per task × attention.

For each task at its real shape and each attention, the module of ``python -m lra task=T attention=A
[--overrides ...]`` is built from the composed Hydra config and trained on a random batch of that shape
(``lra.bench.train_step``); the median of ``--steps`` timed steps after ``--warmup`` untimed ones is
projected to the config's ``trainer.max_steps`` and put beside the Skyformer paper's Table 2. Each CPU
configuration runs in a fresh subprocess by default (``lra.bench.isolation``), its C heap set up as the
training job sets its own (``steady_heap``). Rows and page: ``lra.bench.train_speed_table``.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import torch
from hydra.errors import HydraException
from omegaconf import DictConfig
from omegaconf.errors import OmegaConfBaseException

import attention_zoo
from lra.bench.isolation import Isolation, add_run_arguments
from lra.bench.output import Outputs
from lra.bench.timing import Failure, StepTimes, default_device, measure_step
from lra.bench.train_speed_table import CSV_COLUMNS, TrainSpeedRow, TrainSpeedSettings, page
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
    build = partial(HarnessStep.build, cfg, device)
    result = measure_step(build, device, warmup=config.warmup, repeats=config.steps, threads=config.threads)
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


def configure(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``python -m lra.bench train-speed``."""
    add = parser.add_argument
    add("--tasks", nargs="+", default=list(TASKS))
    add("--attentions", nargs="+", default=None, help="default: every registered attention")
    add("--steps", type=int, default=None, help="timed steps (default: 3 on CPU, 20 on CUDA)")
    add("--warmup", type=int, default=None, help="untimed steps first (default: 1 CPU, 5 CUDA)")
    add(
        "--overrides",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        help="extra Hydra overrides of every configuration, as `python -m lra` takes them "
        "(e.g. experiment=skyformer features=128 task.seq_len=256)",
    )
    add_run_arguments(parser, timeout_s=900)
    add("--out", type=Path, default=Path("results"))


def settings_from(args: argparse.Namespace) -> TrainSpeedSettings:
    steps, warmup = DEFAULT_STEPS[default_device(args.device).type]
    steps, warmup = (
        steps if args.steps is None else args.steps,
        warmup if args.warmup is None else args.warmup,
    )
    if steps < 1 or warmup < 0:
        raise ValueError(f"--steps must be >= 1 and --warmup >= 0, got {steps} and {warmup}")
    attentions = tuple(args.attentions or attention_zoo.available())
    return TrainSpeedSettings(
        tuple(args.tasks),
        attentions,
        steps,
        warmup,
        tuple(args.overrides),
        Isolation.from_args(args),
        args.out,
    )


def run(settings: TrainSpeedSettings, argv: Sequence[str]) -> None:
    device = settings.run.device
    configs = [
        TrainSpeedConfig(task, attention, settings.overrides, str(device), settings.warmup, settings.steps,
                         settings.run.threads)
        for task in settings.tasks
        for attention in settings.attentions
    ]  # fmt: skip
    for config in configs:  # a bad task, attention or override is a usage error before anything runs
        config.compose_checked()
    outputs = Outputs.start(settings.out, "train_speed", device, ["train-speed", *argv])
    rows = settings.run.runner(measure, format_progress, failed).run_all(configs)
    outputs.write_csv(CSV_COLUMNS, rows)
    outputs.write_page(*page(rows, settings))
    outputs.announce("csv,md")
