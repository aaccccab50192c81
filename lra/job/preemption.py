"""Pre-emption and time-outs on SLURM: the job is requeued and continues from its last checkpoint.

One mechanism, submitit's (``hydra/launcher=slurm``; ``submitit_local`` runs the same on one machine):
``SubmititRequeue`` says what a job does with its signal. A SIGTERM that SLURM sends to pre-empt a job
without that signal stops training the same way, and a cluster with ``PreemptMode=REQUEUE`` then
starts the job again, which continues from its checkpoint. Lightning's own SLURM auto-requeue is
switched off (``lightning_plugins``), so that only one mechanism requeues.
"""

from __future__ import annotations

import os
import signal
from types import FrameType
from typing import Any

from lightning.pytorch.plugins.environments import SLURMEnvironment

SUBMITIT_ENV = "SUBMITIT_EXECUTOR"  # set in every job that submitit runs
SIGNAL_ENV = "SUBMITIT_PREEMPT_SIGNAL"  # the signal submitit asks for, USR2 unless set


class SubmititRequeue:
    """Turns submitit's pre-emption/time-out signal into a stop at the end of the current training
    step, and hands the job to submitit's requeue once the run has saved its state.

    Submitit asks SLURM to send its job a signal (``SIGUSR2``, or ``$SUBMITIT_PREEMPT_SIGNAL``)
    ``signal_delay_s`` before the time limit, or before a pre-emption on clusters that signal one:

    1. the signal stops training at the end of the current step, as SIGTERM does: Lightning saves
       ``checkpoints/last.ckpt`` and summary.json says ``interrupted``;
    2. then submitit's own handler requeues the job (``scontrol requeue``; under the local executor, a
       restart), at most ``max_num_timeout`` times for time-outs;
    3. the requeued job starts in the same job folder, which holds its unfinished run: it continues from
       ``last.ckpt`` by itself (``lra.job.resume``, the rule for ``resume=null``), with the same CSV file and
       W&B run id.
    """

    def __init__(self) -> None:
        self.signum = signal.Signals["SIG" + os.environ.get(SIGNAL_ENV, "USR2")]
        self.submitit_handler = signal.getsignal(self.signum)  # installed by submitit before the job
        self.received = False
        signal.signal(self.signum, self.stop_training)

    @classmethod
    def install(cls) -> SubmititRequeue | None:
        """The handler, in a job that submitit runs; None elsewhere."""
        return cls() if SUBMITIT_ENV in os.environ else None

    def stop_training(self, signum: int, frame: FrameType | None) -> None:
        self.received = True
        os.kill(os.getpid(), signal.SIGTERM)  # Lightning stops at the end of the step and saves

    def requeue(self) -> None:
        """After the run stopped on the signal: submitit checkpoints the job's call and requeues it (it
        exits the process)."""
        if self.received and callable(self.submitit_handler):
            self.submitit_handler(self.signum, None)


def lightning_plugins() -> list[Any]:
    """Trainer plugins: on SLURM, its environment without Lightning's auto-requeue (submitit requeues)."""
    return [SLURMEnvironment(auto_requeue=False)] if SLURMEnvironment.detect() else []
