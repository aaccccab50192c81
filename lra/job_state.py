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
    """The Trainer of a run's stage and the two callbacks whose figures its summary reads."""

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
    parts: TrainerParts | None = None  # fine-tuning's
    datamodule: LRADataModule | None = None
    resumed_from: Path | None = None
    metrics: dict[str, Any] = field(default_factory=dict)
    pretrain_parts: TrainerParts | None = None  # the pretraining stage's, once it starts
    pretrain: dict[str, Any] | None = None  # summary.json's "pretrain" record, once the stage knows it

    def current_trainer(self) -> L.Trainer | None:
        """The trainer of the stage that ran last: fine-tuning's, else pretraining's (None before any)."""
        parts = self.parts or self.pretrain_parts
        return parts.trainer if parts else None

    def stopped_at(self) -> str:
        """Where training stopped: ``step N`` of fine-tuning or ``pretraining step N`` (``step None``
        before any trainer)."""
        if self.parts is None and self.pretrain_parts is not None:
            return f"pretraining step {self.pretrain_parts.trainer.global_step}"
        return f"step {self.parts.trainer.global_step if self.parts else None}"
