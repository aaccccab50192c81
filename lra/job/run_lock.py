"""One writer per run folder: a job holds an advisory lock on ``RUN_FOLDER/run.lock`` while it writes
there (``lra.job.train``; under DDP only process 0, the one that writes the run's files).

The lock is ``flock``: the kernel releases it when the process ends, however it ends (SIGKILL
included), so no stale lock is ever left to clean up; the file stays, holding the pid, host and start
of its last holder for the message a second process stops with, and for the readers that tell a run
killed without a word from a running one (``lra.results.killed_jobs``). ``flock`` locks belong to an open
file, so a second lock from the same process conflicts too. A forked child (a data loader worker)
closes its copy of the file at once: a copy would keep the lock alive after its holder ended. On
NFS, Linux carries ``flock`` as a POSIX lock through the server's lock manager, which every client
sees.
"""

from __future__ import annotations

import fcntl
import os
import socket
import time
from pathlib import Path

from lra.config.errors import RunFolderBusy
from lra.results.killed_jobs import LOCK_FILE, holder_line

HOLDER_WAIT_S = 1.0  # how long a refused process waits for the holder to write its pid, at most
HELD: set[int] = set()  # the lock files this process holds open


def close_held_in_child() -> None:
    """In a forked child: close its copies of the held lock files (the parent's locks stay)."""
    for handle in HELD:
        os.close(handle)
    HELD.clear()


os.register_at_fork(after_in_child=close_held_in_child)


class RunLock:
    """The lock this process holds on a run folder: ``acquire``, then ``release`` (or end the process)."""

    def __init__(self, directory: Path, handle: int) -> None:
        self.directory = directory
        self.handle = handle

    @classmethod
    def acquire(cls, directory: Path) -> RunLock:
        """Lock ``directory`` (created if missing) for this process; ``RunFolderBusy`` (one line naming
        the holder's pid and host) when another holds it."""
        directory.mkdir(parents=True, exist_ok=True)
        handle = os.open(directory / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(handle)
            raise RunFolderBusy(
                f"the run folder {directory} is in use by {holder(directory)}: one process writes a run "
                "folder at a time; wait for it to end (or stop it), then resume=auto"
            ) from None
        started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        os.ftruncate(handle, 0)
        os.write(handle, f"{holder_line(os.getpid(), socket.gethostname(), started)}\n".encode())
        HELD.add(handle)
        return cls(directory, handle)

    def release(self) -> None:
        """Unlock the folder (closing the file releases the lock); its file stays."""
        if self.handle >= 0:
            HELD.discard(self.handle)
            os.close(self.handle)
            self.handle = -1


def holder(directory: Path) -> str:
    """Who holds the lock of ``directory``, as its file says (``pid N on host H since T``); a holder
    that has just locked it writes this at once, so an empty file is read again for a moment."""
    deadline = time.monotonic() + HOLDER_WAIT_S
    while True:
        try:
            text = (directory / LOCK_FILE).read_text().strip()
        except OSError:
            text = ""
        if text or time.monotonic() > deadline:
            return text or "another process (it has not written its pid yet)"
        time.sleep(0.05)
