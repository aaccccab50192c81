"""The training progress bar of one stage, titled by the stage: ``Pretraining (epoch 0)``, then
``Fine-tuning (epoch 0)``, so that the console shows where self-pretraining ends; ``Training (epoch 0)``
for a run without pretraining."""

from __future__ import annotations

from typing import Any

import lightning as L
from lightning.pytorch.callbacks import TQDMProgressBar

PRETRAINING = "Pretraining"
FINE_TUNING = "Fine-tuning"
TRAINING = "Training"


class StageProgressBar(TQDMProgressBar):
    """Lightning's bar, with ``title`` before the epoch where Lightning writes ``Epoch N``."""

    def __init__(self, title: str, **options: Any) -> None:
        super().__init__(**options)
        self.title = title

    def on_train_epoch_start(self, trainer: L.Trainer, *args: Any) -> None:
        super().on_train_epoch_start(trainer, *args)
        self.train_progress_bar.set_description(f"{self.title} (epoch {trainer.current_epoch})")
