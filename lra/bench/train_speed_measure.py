"""Measuring the train-speed benchmark: one (task, attention) configuration, in this process or in a
worker subprocess (``python -m lra.bench.train_speed CONFIG_JSON``), as one ``TrainSpeedRow``.

A row holds the task's real shape (batch, sequence length, documents per example), the median time
of a full harness training step (``lra.bench.train_step``) and its peak memory (``lra.bench.timing``),
with status ``ok``, ``oom``, ``timeout`` or ``error``.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from functools import partial
from typing import Any

import torch
from hydra.errors import HydraException
from omegaconf import DictConfig
from omegaconf.errors import OmegaConfBaseException

from lra.bench.isolation import run_isolated
from lra.bench.timing import Failure, StepTimes, measure_step
from lra.bench.train_step import HarnessStep, documents, job_config
from lra.checks import check_config

WORKER = "lra.bench.train_speed"  # python -m lra.bench.train_speed CONFIG_JSON: measure_as_json


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
        """The composed job config (``lra.bench.train_step.job_config``)."""
        return job_config(self.task, self.attention, self.overrides)

    def compose_checked(self) -> DictConfig:
        """``compose`` after the harness's own checks; a ``ValueError`` says what is wrong."""
        try:
            cfg = self.compose()
        except (HydraException, OmegaConfBaseException) as error:
            message = str(error).split("\nConfig search path")[0]  # Hydra appends its search path
            raise ValueError(f"task={self.task} attention={self.attention}: {message}") from None
        check_config(cfg)  # a ConfigError (a ValueError) naming the key
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

    @property
    def samples_per_s(self) -> float | None:
        """Examples (pairs of documents for retrieval) per second at the median step."""
        return None if self.step_ms is None else 1000 * self.batch / self.step_ms

    @property
    def projected_hours(self) -> float | None:
        """The median step × ``run_steps``, in hours (training steps only: no evaluation, no data loading)."""
        return None if self.step_ms is None else self.step_ms * self.run_steps / 3_600_000


def row_for(
    config: TrainSpeedConfig, cfg: DictConfig, result: StepTimes | Failure, load_1min: float
) -> TrainSpeedRow:
    """The row of ``config`` (its shape from the composed ``cfg``) with ``result``'s figures or failure."""
    shape = (config.task, config.attention, cfg.task.batch_size, cfg.task.seq_len, documents(cfg.task))
    if isinstance(result, Failure):
        return TrainSpeedRow(
            *shape, cfg.trainer.max_steps, None, None, result.status, result.detail, load_1min=load_1min
        )
    return TrainSpeedRow(
        *shape,
        cfg.trainer.max_steps,
        result.median_ms,
        result.peak_mb,
        "ok",
        timed_steps=len(result.times_ms),
        load_1min=load_1min,
    )


def measure(config: TrainSpeedConfig) -> TrainSpeedRow:
    """Build ``config``'s module, run ``warmup`` steps, then the median of ``steps`` timed ones."""
    load_1min = os.getloadavg()[0]
    device = torch.device(config.device)
    cfg = config.compose()
    result = measure_step(
        partial(HarnessStep.build, cfg, device),
        device,
        warmup=config.warmup,
        repeats=config.steps,
        threads=config.threads,
    )
    return row_for(config, cfg, result, load_1min)


def measure_as_json(config: dict[str, Any]) -> dict[str, Any]:
    """``measure`` from and to JSON objects: the worker subprocess's job."""
    return asdict(measure(TrainSpeedConfig(**{**config, "overrides": tuple(config["overrides"])})))


def measure_in_subprocess(
    config: TrainSpeedConfig, timeout_s: float, mem_limit_mb: int | None
) -> TrainSpeedRow:
    """Run ``config`` in a fresh interpreter; no result in time, or a killed child, is a failed row."""
    load_1min = os.getloadavg()[0]
    result = run_isolated(WORKER, asdict(config), timeout_s, mem_limit_mb)
    if isinstance(result, Failure):
        return row_for(config, config.compose(), result, load_1min)
    return TrainSpeedRow(**result)


def format_progress(row: TrainSpeedRow) -> str:
    figures = (
        f"{row.step_ms:9.1f} ms/step {row.samples_per_s:8.1f} samples/s {row.projected_hours:8.2f} h "
        f"{row.peak_mem_mb:9.1f} MB ({row.timed_steps} timed)"
        if row.status == "ok"
        else f"{row.status.upper()} {row.detail}"
    )
    where = f"[{row.task:10}] {row.attention:10} batch={row.batch} n={row.seq_len}×{row.documents}"
    return f"{where}, load {row.load_1min:.1f}: {figures}"
