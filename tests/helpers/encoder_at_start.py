"""A Lightning callback that saves the encoder's weights as fine-tuning starts (tests of self-pretraining).

``+callbacks.start._target_=helpers.encoder_at_start.EncoderAtStart +callbacks.start.path=FILE``: at the
start of the fine-tuning fit (``LRALitModule``; the pretraining stage is left alone) the encoder's state
dict goes to FILE, so that a test can compare it with the pretrained weights it should equal.
"""

from __future__ import annotations

import lightning as L
import torch
from lightning.pytorch.callbacks import Callback

from lra.model.module import LRALitModule


class EncoderAtStart(Callback):
    def __init__(self, path: str) -> None:
        self.path = path

    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if isinstance(pl_module, LRALitModule):
            torch.save(
                {k: v.detach().cpu().clone() for k, v in pl_module.model.encoder.state_dict().items()},
                self.path,
            )
