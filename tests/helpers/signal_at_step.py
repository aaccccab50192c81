"""A Lightning callback that signals its run at a given training step (tests of ``resume``).

``python -m lra +callbacks.kill._target_=helpers.signal_at_step.SignalAtStep +callbacks.kill.step=5
+callbacks.kill.signal=SIGTERM`` with ``tests/`` on PYTHONPATH: the signal lands after the 5th optimizer
step, exactly as one sent from outside (by a cluster before pre-emption, or ``kill -9``) at that moment.
``once``: a file that marks the signal as sent, so that a resumed run passing the step again goes on,
and of several processes running the same command (search workers) only the first is signalled.
``module``: the class name of the LightningModule whose training it stops (``MaskedPretrainModule``:
the self-pretraining stage; ``LRALitModule``: fine-tuning); None stops the first to reach the step.
Under DDP each process signals itself (a signal to the process group), or only the process of global
rank ``rank``; each keeps its own ``once`` file (``<once>.rank<N>``).

``group``: the signal goes to the whole process group, as a scheduler or a terminal sends it, from a
process of its own (the run's loader workers take a signal from the run itself as their end). Only a
group that leads its own session is signalled, as ``python -m lra`` started with ``start_new_session``
leads one with its sweep's workers, DDP processes and loader workers; elsewhere (a process group that
may hold the test runner) the signal is never sent. ``during``: ``training`` (after the step) or
``validation`` (after the first batch of the evaluation that follows the step).
"""

from __future__ import annotations

import os
import signal as signals
import subprocess
import sys
from pathlib import Path

import lightning as L
from lightning.pytorch.callbacks import Callback

KILL_GROUP = "import os, sys; os.killpg(int(sys.argv[1]), int(sys.argv[2]))"


class SignalAtStep(Callback):
    def __init__(
        self,
        step: int,
        signal: str,
        once: str,
        module: str | None = None,
        rank: int | None = None,
        group: bool = False,
        during: str = "training",
    ) -> None:
        self.step = step
        self.signal = signals.Signals[signal]
        self.once = Path(once)
        self.module = module
        self.rank = rank
        self.group = group
        self.during = during

    def on_train_batch_end(self, trainer: L.Trainer, pl_module: L.LightningModule, outputs, batch, batch_idx):
        if self.during == "training":
            self.signal_at_step(trainer, pl_module)

    def on_validation_batch_end(
        self, trainer: L.Trainer, pl_module: L.LightningModule, outputs, batch, batch_idx, dataloader_idx=0
    ):
        if self.during == "validation" and batch_idx == 0 and not trainer.sanity_checking:
            self.signal_at_step(trainer, pl_module)

    def signal_at_step(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if self.module is not None and type(pl_module).__name__ != self.module:
            return
        if self.rank is not None and trainer.global_rank != self.rank:
            return
        if self.group and os.getpgid(0) != os.getsid(0):  # the group is not a session of its own
            return
        if trainer.global_step == self.step and self.claim(trainer):
            self.send()

    def send(self) -> None:
        if not self.group:
            os.kill(os.getpid(), self.signal)
            return
        # From a process of its own, as a scheduler or a terminal sends it: the signal reaches this one
        # (and the sender) before the command returns.
        subprocess.run(
            [sys.executable, "-c", KILL_GROUP, str(os.getpgid(0)), str(int(self.signal))], check=False
        )

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
