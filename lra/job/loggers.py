"""Lightning loggers from the ``logger`` config node: ``{name: options}`` for each logger to use.

- ``wandb``: W&B, offline unless ``mode: online`` (then a login is required and checked up front,
  so a run never waits on a network it cannot use); run ``{task}-{attention}-s{seed}`` with the
  options its sweep varies (``lra.config.naming``), grouped by task (a search trial: by study), tagged with
  task, attention, budget (``budget=N``, for an attention with a budget option) and
  ``pretrain=masked`` for a self-pretrained run, the resolved config as the run config.
- ``csv``: ``<run dir>/csv/metrics.csv`` and ``hparams.yaml``; every run has it, whatever the config
  names (the report reads its validation curves from it), with ``CSV_DEFAULTS`` when not named. Its
  rows are written whole or not at all (``lra.job.csv_metrics``).
"""

from __future__ import annotations

import csv
import netrc
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from lightning.pytorch.loggers import CSVLogger, Logger, WandbLogger

from lra.config.errors import ConfigError
from lra.config.naming import run_group, run_name
from lra.job.csv_metrics import AtomicCSVLogger
from lra.model.pretraining import PRETRAIN_STEP

WANDB_MODES = ("offline", "online", "disabled")
PRETRAIN_METRICS = ("pretrain/loss", "pretrain/acc", "pretrain/elapsed_s", "val/pretrain_acc")
CSV_DEFAULTS = {"flush_logs_every_n_steps": 50}  # as conf/logger/csv.yaml


@dataclass(frozen=True)
class ResumePoint:
    """Where a resumed run's checkpoint stands: after ``step`` steps of pretraining or of fine-tuning."""

    step: int
    pretraining: bool = False


@dataclass(frozen=True)
class RunIdentity:
    """What names a run in the loggers; ``run_id`` is its W&B id, the same in every resumed segment."""

    task: str
    attention: str
    seed: int
    run_id: str
    options: dict[str, str] = field(default_factory=dict)  # the options its sweep varies
    budget: int | None = None  # the attention's budget option (landmarks, projection, features)
    pretraining: bool = False  # the run self-pretrains before fine-tuning (lra.model.pretraining)

    @property
    def name(self) -> str:
        return run_name(self.task, self.attention, self.seed, self.options)

    @property
    def tags(self) -> list[str]:
        budget = [] if self.budget is None else [f"budget={self.budget}"]
        return [self.task, self.attention, *budget, *(["pretrain=masked"] if self.pretraining else [])]


def wandb_credentials_found() -> bool:
    """A W&B API key in the environment, or a netrc entry for the W&B host (what ``wandb login`` writes)."""
    if os.environ.get("WANDB_API_KEY") or os.environ.get("WANDB_IDENTITY_TOKEN_FILE"):
        return True
    host = urlparse(os.environ.get("WANDB_BASE_URL", "https://api.wandb.ai")).hostname
    path = Path(os.environ.get("NETRC", Path.home() / ".netrc"))
    try:
        return netrc.netrc(path).authenticators(host) is not None
    except (OSError, netrc.NetrcParseError):
        return False


def check_wandb(options: dict[str, Any]) -> None:
    if options["mode"] not in WANDB_MODES:
        raise ConfigError(
            f"logger.wandb.mode={options['mode']!r} is invalid; valid modes: {', '.join(WANDB_MODES)}"
        )
    if options["mode"] == "online" and not wandb_credentials_found():
        raise ConfigError(
            "logger.wandb.mode=online but no W&B login was found (WANDB_API_KEY or ~/.netrc); "
            "run `wandb login`, or keep the default offline mode and `wandb sync` the run folder later"
        )


def build_wandb(
    options: dict[str, Any], run: RunIdentity, output_dir: Path, resumed: ResumePoint | None
) -> Logger:
    logger = WandbLogger(
        id=run.run_id,
        resume="allow" if resumed is not None else None,
        name=run.name,
        group=run_group(run.task),
        tags=run.tags,
        project=options["project"],
        entity=options["entity"],
        mode=options["mode"],
        save_dir=str(output_dir),
    )
    # Lightning passes wandb.init anonymous=None, a setting wandb warns it has dropped: leave it out.
    logger._wandb_init.pop("anonymous", None)
    if run.pretraining:  # its own x axis: the panels of pretrain/* start at its step 0
        logger.experiment.define_metric(PRETRAIN_STEP)
        for name in PRETRAIN_METRICS:
            logger.experiment.define_metric(name, step_metric=PRETRAIN_STEP)
    return logger


def build_csv(
    options: dict[str, Any], run: RunIdentity, output_dir: Path, resumed: ResumePoint | None
) -> Logger:
    logger = AtomicCSVLogger(save_dir=str(output_dir), name="csv", version="", **options)
    if resumed is not None:
        continue_csv(logger, resumed)
    return logger


def csv_number(text: str) -> int | float:
    return int(text) if text.lstrip("-").isdigit() else float(text)


def row_before(row: dict[str, str], resumed: ResumePoint) -> bool:
    """Whether an earlier segment's CSV row was logged before the checkpoint at ``resumed``: a row of
    the same stage logged before its step (rows carry the index of the step they were logged in,
    ``step - 1`` at most for a checkpoint saved after ``step`` optimizer steps), or a pretraining row
    when fine-tuning resumes."""
    pretraining_row = bool(row.get(PRETRAIN_STEP))
    if pretraining_row != resumed.pretraining:
        return pretraining_row
    return int(row["step"]) < resumed.step


def continue_csv(logger: CSVLogger, resumed: ResumePoint) -> None:
    """Write back the rows an earlier segment logged before ``resumed`` (the logger truncates the file)."""
    path = Path(logger.log_dir) / "metrics.csv"
    rows = []
    if path.is_file():
        with open(path, newline="") as handle:
            rows = [row for row in csv.DictReader(handle) if row_before(row, resumed)]
    with warnings.catch_warnings():  # its warning that the old file will be deleted: the rows come back
        warnings.filterwarnings("ignore", message=".*Previous log files")
        writer = logger.experiment  # created now: it deletes the old file
    for row in rows:
        step = int(row.pop("step"))
        writer.log_metrics({key: csv_number(value) for key, value in row.items() if value != ""}, step)
    logger.save()


def no_check(options: dict[str, Any]) -> None:
    """The CSV logger has nothing that can be wrong before it is built."""


@dataclass(frozen=True)
class LoggerKind:
    build: Callable[[dict[str, Any], RunIdentity, Path, ResumePoint | None], Logger]
    check: Callable[[dict[str, Any]], None]


LOGGERS: dict[str, LoggerKind] = {
    "wandb": LoggerKind(build_wandb, check_wandb),
    "csv": LoggerKind(build_csv, no_check),
}


def check_loggers(chosen: dict[str, dict[str, Any]]) -> None:
    """Every logger of ``chosen`` (the ``logger`` node: name -> options) exists and can start
    (``ConfigError`` otherwise)."""
    for name, options in chosen.items():
        if name not in LOGGERS:
            raise ConfigError(f"logger.{name} is not a logger; valid loggers: {', '.join(LOGGERS)}")
        LOGGERS[name].check(options)


def build_loggers(
    chosen: dict[str, dict[str, Any]],
    run: RunIdentity,
    output_dir: Path,
    hparams: dict[str, Any],
    resumed: ResumePoint | None = None,
) -> list[Logger]:
    """The loggers of ``chosen`` (name -> options), each given the resolved config ``hparams`` as its
    run config.

    ``resumed``: where the checkpoint a resumed run continues from stands (None: a fresh run). A
    resumed run logs to the same W&B run id and keeps the CSV rows logged before its checkpoint
    (``row_before``; rows logged after it, by a run killed before its next checkpoint, are dropped:
    the resumed run logs those steps again). Self-pretraining logs in the same run at its own steps:
    its rows carry ``pretrain/step`` (``PRETRAIN_STEP``), also the W&B x axis of its metrics
    (``PRETRAIN_METRICS``), so that they never collide with fine-tuning's.
    """
    every = {**chosen, "csv": chosen.get("csv", CSV_DEFAULTS)}
    loggers = [LOGGERS[name].build(options, run, output_dir, resumed) for name, options in every.items()]
    for logger in loggers:
        logger.log_hyperparams(hparams)
    return loggers


def finish_loggers(loggers: list[Logger]) -> None:
    """Close the W&B run so that the next job of a multirun starts its own."""
    if any(isinstance(logger, WandbLogger) for logger in loggers):
        import wandb

        wandb.finish()
