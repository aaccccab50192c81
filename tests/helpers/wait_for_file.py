"""A Lightning callback that holds its run at the start of training until a file exists (tests of the
run-folder lock): ``+callbacks.wait._target_=helpers.wait_for_file.WaitForFile +callbacks.wait.path=FILE``
with ``tests/`` on PYTHONPATH keeps the run, and so its lock, alive until the test creates FILE."""

from __future__ import annotations

import time
from pathlib import Path

import lightning as L
from lightning.pytorch.callbacks import Callback


class WaitForFile(Callback):
    def __init__(self, path: str, timeout_s: float = 120.0) -> None:
        self.path = Path(path)
        self.timeout_s = timeout_s

    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        deadline = time.monotonic() + self.timeout_s
        while not self.path.exists():
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.path} did not appear within {self.timeout_s} s")
            time.sleep(0.05)
