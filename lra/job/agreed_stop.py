"""SIGTERM and Ctrl+C stop every process of a run at the same training step, with no collective in a handler.

Lightning's own SIGTERM handler broadcasts inside the handler (``_SignalConnector``): under DDP a rank
signalled while its peers are in another collective (the backward all-reduce) waits there for ever,
and a rank signalled alone stops alone. ``AgreedStop`` replaces that connector for every
``trainer.fit`` and ``trainer.test`` of the Trainer it is given to:

- the handlers of SIGTERM and SIGINT only note the signal in this process (``StopFlag``, a
  ``lra.config.stop_signals.NotedStop``); a second SIGINT while a stop is pending raises ``KeyboardInterrupt``
  as usual, to force the exit. Inside a sweep (``lra.job.sweep_stop``) they pass each signal on to the
  sweep's handlers, and a signal the sweep noted before training started stops it after its first step;
- at the end of every training step the processes agree on it: one all-reduce (maximum) of the noted
  signal's number, so a signal to any subset of the ranks stops them all; on one process there is no
  collective;
- once agreed, every process sets Lightning's stop flag, and Lightning raises ``SIGTERMException`` on
  every rank after that same step (after its evaluation, when one is due): the ``last`` checkpoint is
  saved on exception by every rank together, and ``lra.job.job_end`` records the run as interrupted. At
  an epoch's last step the stop waits for the next step (``epoch_ends_here``).

Outside training (the tests after ``fit``) a noted signal changes nothing: the run finishes.
"""

from __future__ import annotations

import signal
from typing import Any

import lightning as L
import torch
import torch.distributed as dist
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.trainer.connectors.signal_connector import _SignalConnector

from lra.config.stop_signals import STOP_SIGNALS, NotedStop, current_note


class StopFlag(_SignalConnector, NotedStop):
    """Lightning's signal connector with handlers that only note a stop signal (``noted``: its number,
    0 for none; ``NotedStop``, inside the sweep's when there is one); ``agreed``: the signal the
    processes agreed to stop on (set by ``AgreedStop``)."""

    def __init__(self, trainer: L.Trainer) -> None:
        _SignalConnector.__init__(self, trainer)
        NotedStop.__init__(self)
        self.agreed: signal.Signals | None = None

    def register_signal_handlers(self) -> None:
        self.received_sigterm = False
        outer = current_note()  # the sweep's, or a flag's left in place after its agreed stop: that one's
        NotedStop.__init__(self, outer=outer.outer if isinstance(outer, StopFlag) else outer)
        self._original_handlers = self._get_current_signal_handlers()  # teardown puts them back
        for signum in STOP_SIGNALS:
            self._register_signal(signum, self.note)

    def teardown(self) -> None:
        if self.agreed is not None:  # stopping: a later SIGTERM (SLURM's, after USR2) must not cut it short
            for signum in STOP_SIGNALS:
                self._original_handlers.pop(signum, None)
        super().teardown()


class AgreedStop(Callback):
    """Installs ``StopFlag`` in its Trainer and, after each training step, stops every process at that
    step when any of them noted a stop signal (module docstring)."""

    def setup(self, trainer: L.Trainer, pl_module: L.LightningModule, stage: str) -> None:
        if not isinstance(trainer._signal_connector, StopFlag):  # Lightning registers its handlers later
            trainer._signal_connector = StopFlag(trainer)

    def on_train_batch_end(
        self, trainer: L.Trainer, pl_module: L.LightningModule, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        flag: StopFlag = trainer._signal_connector
        noted = flag.noted
        if trainer.world_size > 1 and dist.is_available() and dist.is_initialized():
            noted_anywhere = torch.tensor([noted], device=trainer.strategy.root_device)
            dist.all_reduce(noted_anywhere, op=dist.ReduceOp.MAX)
            noted = int(noted_anywhere.item())
        if noted and flag.agreed is None and not epoch_ends_here(trainer):
            flag.agreed = signal.Signals(noted)
            flag.received_sigterm = True  # Lightning raises SIGTERMException after this step


def epoch_ends_here(trainer: L.Trainer) -> bool:
    """Whether this step ends its epoch or the training (and an epoch has more than one step).

    A stop there is put off by one step: Lightning would raise only after the epoch's end, and a run
    resumed from a checkpoint saved between two epochs under DDP runs one batch of the next epoch and
    skips the rest; after the last step the run simply completes.
    """
    batches = trainer.fit_loop.epoch_loop.batch_progress.current.ready
    last_batch = batches >= trainer.num_training_batches and trainer.num_training_batches > 1
    return last_batch or 0 < trainer.max_steps <= trainer.global_step


def stop_signal(trainer: L.Trainer | None) -> signal.Signals:
    """The signal ``trainer``'s processes agreed to stop on (SIGTERM when not known)."""
    agreed = getattr(getattr(trainer, "_signal_connector", None), "agreed", None)
    return agreed or signal.SIGTERM
