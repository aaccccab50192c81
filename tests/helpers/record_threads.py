"""A Lightning callback that writes the torch thread count and process id of its job (tests of
``hydra/launcher=joblib``): ``+callbacks.threads._target_=helpers.record_threads.RecordThreads``
with ``tests/`` on PYTHONPATH writes ``threads.json`` in the run folder when training starts."""

from __future__ import annotations

import json
import os
from pathlib import Path

import lightning as L
import torch
from lightning.pytorch.callbacks import Callback


class RecordThreads(Callback):
    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        record = {"threads": torch.get_num_threads(), "pid": os.getpid()}
        (Path(trainer.default_root_dir) / "threads.json").write_text(json.dumps(record))
