"""What a job is made of and what it has reached, below both the code that runs the job (``train``)
and the code that records how it ended (``job_end``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import lightning as L
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.loggers import Logger

from lra.data import LRADataModule
from lra.job.callbacks import EfficiencyMonitor
from lra.job.run_lock import RunLock


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
    lock: RunLock | None = None  # this job's lock on its run folder, once planned (process 0)
    refused_folder: bool = False  # another process writes the run folder: this job writes nothing

    def best_so_far(self) -> dict[str, float]:
        """``{"val/acc_best": accuracy}``: fine-tuning's best validation accuracy (0-1) so far; empty
        before its first evaluation."""
        score = self.parts.checkpoint.best_model_score if self.parts else None
        return {} if score is None else {"val/acc_best": float(score)}

    def reached(self) -> dict[str, Any]:
        """The metrics of a job that stopped before its end: its step and its best validation so far."""
        return {"train/steps": self.parts.trainer.global_step, **self.best_so_far()} if self.parts else {}

    def current_trainer(self) -> L.Trainer | None:
        """The trainer of the stage that ran last: fine-tuning's, else pretraining's (None before any)."""
        parts = self.parts or self.pretrain_parts
        return parts.trainer if parts else None

    def stopped_at(self) -> str:
        """Where training stopped: ``step N`` of fine-tuning, with its best validation accuracy so far
        (``step 120, best val/acc 41.20%``), or ``pretraining step N`` (``step None`` before any trainer)."""
        if self.parts is None and self.pretrain_parts is not None:
            return f"pretraining step {self.pretrain_parts.trainer.global_step}"
        if self.parts is None:
            return "step None"
        best = self.best_so_far()
        so_far = f", best val/acc {best['val/acc_best']:.2%}" if best else ", before its first validation"
        return f"step {self.parts.trainer.global_step}{so_far}"

    def interruption(self, checkpoints: Path) -> str:
        """The error of a job that Ctrl+C stopped: where, and where its state is (Lightning saves
        ``checkpoints`` when Ctrl+C stops a trainer)."""
        if self.parts is None and self.pretrain_parts is None:
            return "Ctrl+C before training began"
        return f"Ctrl+C at {self.stopped_at()}; the state is saved in {checkpoints}: resume=auto continues"
