"""What a job is made of and what it has reached, below both the code that runs the job (``train``)
and the code that records how it ended (``job_end``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import lightning as L
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.loggers import Logger

from lra.callbacks import EfficiencyMonitor
from lra.data import LRADataModule


@dataclass
class TrainerParts:
    """The Trainer of a run and the two callbacks whose figures its summary reads."""

    trainer: L.Trainer
    efficiency: EfficiencyMonitor
    checkpoint: ModelCheckpoint


@dataclass
class JobState:
    """What a job's outcome is recorded from, filled in as the job goes."""

    run_dir: Path
    started: str
    status: str = "completed"
    error: str | None = None
    loggers: list[Logger] = field(default_factory=list)
    parts: TrainerParts | None = None
    datamodule: LRADataModule | None = None
    resumed_from: Path | None = None
    metrics: dict[str, Any] = field(default_factory=dict)
