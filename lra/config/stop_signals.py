"""SIGTERM and SIGINT, the signals that stop a job or a sweep: noted instead of ending the process, or
held back from a thread and the processes it starts.

A scheduler (SLURM's pre-emption, ``scancel``, ``timeout``) and a terminal's Ctrl+C send them to a
job's whole process group, and the processes of a run each take their part:

- ``NotedStop``: handlers that only note the signal (``noted``); a second SIGINT raises
  ``KeyboardInterrupt``, to force the exit. One whose handlers replace another's (a job's
  inside its sweep's, ``current_note``) passes each signal on to it and starts from what it noted;
- ``noting``: a ``NotedStop``'s handlers in place for a while;
- ``blocked`` / ``unblocked``: the signals held back in this thread (pending, not lost), or let
  through; a process started meanwhile starts with the same mask;
- ``received_off_this_thread``: this thread holds them back while a helper thread receives them, so
  that the processes this thread starts hold them back too, while Python still runs the handlers.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from types import FrameType

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class NotedStop:
    """Handlers of the stop signals that note them (``noted``: the largest signal number, 0 for none;
    ``interrupted``: a SIGINT came) instead of ending the process; ``outer``: the ``NotedStop`` whose
    handlers these replace, which hears every signal too."""

    def __init__(self, outer: NotedStop | None = None) -> None:
        self.outer = outer
        self.noted = 0 if outer is None else outer.noted
        self.interrupted = outer is not None and outer.interrupted

    @property
    def signal(self) -> signal.Signals | None:
        """The signal noted (SIGTERM before SIGINT when both came), or None."""
        return signal.Signals(self.noted) if self.noted else None

    def note(self, signum: int, frame: FrameType | None) -> None:
        if self.outer is not None:
            self.outer.note(signum, frame)
        if signum == signal.SIGINT and self.interrupted:
            raise KeyboardInterrupt  # Ctrl+C twice: stop now
        self.interrupted = self.interrupted or signum == signal.SIGINT
        self.noted = max(self.noted, signum)


def current_note() -> NotedStop | None:
    """The ``NotedStop`` whose handler takes SIGTERM in this process now, if any."""
    owner = getattr(signal.getsignal(signal.SIGTERM), "__self__", None)
    return owner if isinstance(owner, NotedStop) else None


@contextmanager
def noting(note: NotedStop) -> Iterator[NotedStop]:
    """``note``'s handlers take the stop signals until the end, then the handlers they replaced."""
    previous = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}
    for signum in STOP_SIGNALS:
        signal.signal(signum, note.note)
    try:
        yield note
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@contextmanager
def masked(how: int) -> Iterator[None]:
    """The stop signals added to (``SIG_BLOCK``) or taken from (``SIG_UNBLOCK``) this thread's mask."""
    previous = signal.pthread_sigmask(how, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def blocked() -> AbstractContextManager[None]:
    """The stop signals wait (pending) in this thread, and in the processes it starts, until the end."""
    return masked(signal.SIG_BLOCK)


def unblocked() -> AbstractContextManager[None]:
    """The stop signals reach this thread until the end (those pending land at once)."""
    return masked(signal.SIG_UNBLOCK)


@contextmanager
def received_off_this_thread() -> Iterator[None]:
    """Until the end, this thread and the threads and processes it starts hold the stop signals back,
    and a helper thread receives them: Python runs their handlers in the main thread all the same."""
    done = threading.Event()
    threading.Thread(target=done.wait, name="stop signals", daemon=True).start()  # its mask lets them in
    try:
        with blocked():
            yield
    finally:
        done.set()
