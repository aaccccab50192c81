"""The loaders' worker processes: how they start, and that they leave SIGTERM and SIGINT to the process
that trains.

They start as this platform's standard library starts processes (fork on Linux, spawn on macOS,
``standard_context``), whatever this process's default is: a job in a worker process of
``hydra/launcher=joblib`` has loky's method as its default, which cannot start them.

A scheduler (SLURM's ``scancel``, a pre-emption, ``timeout``) and a terminal's Ctrl+C signal a job's
whole process group: its loader workers too. A worker that the signal kills makes its loader raise in
the training process (``DataLoader worker ... is killed by signal``) at once, wherever that process is,
so the run would fail instead of stopping at the end of its step (``lra.job.agreed_stop``). A worker
of ``worker_loader`` therefore takes no stop signal but from the process that started it:

- the loader starts its workers with SIGTERM and SIGINT blocked (``lra.config.stop_signals.blocked``): a
  worker inherits the mask at its start, so no signal lands before it is ready for them;
- in the worker (``leave_stop_signals``, its ``worker_init_fn``), a thread takes each stop signal as
  it comes (``sigwaitinfo``): one that the training process sent ends the worker, as torch's own
  handler does (torch and multiprocessing ``terminate`` a worker that does not exit when asked);
  any other is left to the training process, which stops at the end of the step and then shuts its
  workers down.

A worker whose training process dies (SIGKILL) still ends by torch's watchdog.
"""

from __future__ import annotations

import functools
import multiprocessing
import os
import signal
import threading
from multiprocessing.context import BaseContext
from typing import Any

from torch.utils.data import DataLoader, Dataset

from lra.config.stop_signals import STOP_SIGNALS, blocked


def take_stop_signals(trainer_pid: int) -> None:
    """Take the stop signals sent to this worker: end it on one from ``trainer_pid``, drop the rest."""
    while True:
        received = signal.sigwaitinfo(STOP_SIGNALS)
        if received.si_pid == trainer_pid:
            os._exit(0)


def leave_stop_signals(worker_id: int, trainer_pid: int) -> None:
    """``worker_init_fn``: block the stop signals in this worker and take them in a thread of its own
    (``take_stop_signals``)."""
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)  # the thread below inherits the mask
    threading.Thread(target=take_stop_signals, args=(trainer_pid,), name="stop signals", daemon=True).start()


def standard_context() -> BaseContext:
    """The platform's standard start method (the first of ``get_all_start_methods``, which does not
    follow ``set_start_method``)."""
    return multiprocessing.get_context(multiprocessing.get_all_start_methods()[0])


class WorkerLoader(DataLoader):
    """A ``DataLoader`` that starts its workers with the stop signals blocked (module docstring)."""

    def __iter__(self) -> Any:
        with blocked():  # the workers start here (each pass's, without persistent_workers)
            return super().__iter__()


def worker_loader(dataset: Dataset, num_workers: int, **options: Any) -> WorkerLoader:
    """A loader of ``dataset`` (``DataLoader``'s ``options``) whose ``num_workers`` workers start by the
    platform's standard method and leave SIGTERM and SIGINT to this process."""
    if num_workers > 0:
        options["multiprocessing_context"] = standard_context()
    init = functools.partial(leave_stop_signals, trainer_pid=os.getpid())
    return WorkerLoader(dataset, num_workers=num_workers, worker_init_fn=init, **options)
