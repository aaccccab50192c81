"""A Lightning callback that sends its own process a signal at a given training step (tests of ``resume``).

``python -m lra +callbacks.kill._target_=helpers.signal_at_step.SignalAtStep +callbacks.kill.step=5
+callbacks.kill.signal=SIGTERM`` with ``tests/`` on PYTHONPATH: the signal lands after the 5th optimizer
step, exactly as one sent from outside (by a cluster before pre-emption, or ``kill -9``) at that moment.
``once``: a file that marks the signal as sent, so that a resumed run passing the step again goes on,
and of several processes running the same command (search workers) only the first is signalled.
``module``: the class name of the LightningModule whose training it stops (``MaskedPretrainModule``:
the self-pretraining stage; ``LRALitModule``: fine-tuning); None stops the first to reach the step.
Under DDP each process signals itself (a signal to the process group), or only the process of global
rank ``rank``; each keeps its own ``once`` file (``<once>.rank<N>``).
"""

from __future__ import annotations

import os
import signal as signals
from pathlib import Path

import lightning as L
from lightning.pytorch.callbacks import Callback


class SignalAtStep(Callback):
    def __init__(
        self, step: int, signal: str, once: str, module: str | None = None, rank: int | None = None
    ) -> None:
        self.step = step
        self.signal = signals.Signals[signal]
        self.once = Path(once)
        self.module = module
        self.rank = rank

    def on_train_batch_end(self, trainer: L.Trainer, pl_module: L.LightningModule, outputs, batch, batch_idx):
        if self.module is not None and type(pl_module).__name__ != self.module:
            return
        if self.rank is not None and trainer.global_rank != self.rank:
            return
        if trainer.global_step == self.step and self.claim(trainer):
            os.kill(os.getpid(), self.signal)

    def claim(self, trainer: L.Trainer) -> bool:
        """Create the ``once`` file (under DDP, this process's own); False when it exists already. The
        creation is atomic, so of several processes that reach the step at once, one signals itself."""
        once = self.once
        if trainer.world_size > 1:
            once = once.with_name(f"{once.name}.rank{trainer.global_rank}")
        try:
            once.open("x").close()
        except FileExistsError:
            return False
        return True
