"""A job that ended without a word: killed by SIGKILL (the kernel's out-of-memory killer sends it) or a
crash, so that no handler ran and no summary.json was written.

The evidence is the run lock (``lra.job.run_lock``): its file names the pid, host and start of its
last holder and is written when the lock is taken. A run ended silently when that holder ran on this
host, its pid no longer runs, and no summary.json was written after the lock was taken. A holder whose
pid still runs is running; one on another host (or a folder without a lock file) cannot be told
from here, and the readers fall back on the folder's modification times.

Where the kernel log can be read (``/dev/kmsg``, ``dmesg``, ``journalctl -k``; usually not in a
container), the reason quotes its ``Killed process PID`` line, or says that it names none; otherwise
it says that the log could not be read, and what to look for on the host.
"""

from __future__ import annotations

import functools
import json
import os
import re
import socket
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lra.results.summary_json import RUN_FILE, SUMMARY_FILE

LOCK_FILE = "run.lock"
KILLED = "killed"  # the status the readers give such a run
HOLDER_LINE = re.compile(r"pid (\d+) on host (\S+) since (\S+)")
KMSG = Path("/dev/kmsg")
KMSG_RECORDS = 1_000_000  # at most this many records of /dev/kmsg are read
COMMAND_TIMEOUT_S = 10


def holder_line(pid: int, host: str, since: str) -> str:
    """What the lock file says of its holder (``HOLDER_LINE`` reads it back)."""
    return f"pid {pid} on host {host} since {since}"


@dataclass(frozen=True)
class Holder:
    """The last holder of a run's lock, as its file says."""

    pid: int
    host: str
    since: str


def lock_holder(run_dir: Path) -> Holder | None:
    """The last holder named by ``run_dir``'s lock file; None without a readable one."""
    try:
        match = HOLDER_LINE.search((run_dir / LOCK_FILE).read_text())
    except OSError:
        return None
    return None if match is None else Holder(int(match[1]), match[2], match[3])


def process_runs(pid: int) -> bool:
    """Whether a process ``pid`` exists on this host (one of another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def summary_after_lock(run_dir: Path) -> bool:
    """Whether the run's summary.json was written after its lock was last taken."""
    try:
        return (run_dir / SUMMARY_FILE).stat().st_mtime >= (run_dir / LOCK_FILE).stat().st_mtime
    except OSError:
        return False


def silent_end(run_dir: Path) -> Holder | None:
    """The holder of the run's lock when the run ended without a word (module docstring), else None."""
    holder = lock_holder(run_dir)
    if holder is None or holder.host != socket.gethostname() or process_runs(holder.pid):
        return None
    return None if summary_after_lock(run_dir) else holder


def read_kmsg() -> list[str]:
    """The kernel's ring buffer from ``/dev/kmsg`` (``PermissionError`` where it is closed)."""
    lines = []
    handle = os.open(KMSG, os.O_RDONLY | os.O_NONBLOCK)
    try:
        for _ in range(KMSG_RECORDS):
            try:
                record = os.read(handle, 8192)
            except BrokenPipeError:  # records overwritten while reading: go on with the next
                continue
            except BlockingIOError:  # no more records
                break
            lines.append(record.decode(errors="replace").split(";", 1)[-1].strip())
    finally:
        os.close(handle)
    return lines


def command_lines(*command: str) -> list[str]:
    """The output lines of ``command``; ``OSError`` naming it when it is absent or refuses."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError) as error:
        raise OSError(f"{command[0]}: {error}") from None
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        raise OSError(said if said.startswith(command[0]) else f"{command[0]}: {said}")
    return done.stdout.splitlines()


# Where the kernel log is read from, in order: the first that answers is used.
KERNEL_LOGS: dict[str, Callable[[], list[str]]] = {
    str(KMSG): read_kmsg,
    "dmesg": functools.partial(command_lines, "dmesg"),
    "journalctl -k": functools.partial(command_lines, "journalctl", "-k", "--no-pager", "-q", "-o", "cat"),
}


@functools.cache
def kernel_log() -> tuple[str, list[str] | None]:
    """(where the kernel log was read, its lines), or (why it could not be read, None); read once."""
    failures = []
    for source, read in KERNEL_LOGS.items():
        try:
            return source, read()
        except OSError as error:
            failures.append(str(error) if source != str(KMSG) else f"{KMSG}: {error.strerror}")
    return "; ".join(failures), None


def oom_kill_line(pid: int, lines: list[str]) -> str | None:
    """The kernel's ``Killed process PID`` line of ``pid`` (the out-of-memory killer's), if any."""
    pattern = re.compile(rf"Killed process {pid}\b")
    return next((line.strip() for line in reversed(lines) if pattern.search(line)), None)


def silent_end_reason(holder: Holder) -> str:
    """Why a run that ended without a word did not complete, with what the kernel log says of it."""
    source, lines = kernel_log()
    if lines is None:
        told = (
            f"kernel log unreadable here, look in dmesg on {holder.host} for 'Killed process "
            f"{holder.pid}' ({source})"
        )
    elif found := oom_kill_line(holder.pid, lines):
        told = f"kernel log ({source}): {found}"
    else:
        told = f"the kernel log ({source}) names no out-of-memory kill of it"
    return f"killed without a word (SIGKILL or a crash: pid {holder.pid} left no summary.json); {told}"


def killed_summary(run_dir: Path) -> dict[str, Any] | None:
    """A stand-in summary, status ``killed``, of a run that ended without a word, named from its
    run.json (task, attention, seed, the options its sweep varies); None for any other run."""
    holder = silent_end(run_dir)
    if holder is None:
        return None
    try:
        record = json.loads((run_dir / RUN_FILE).read_text())
    except (OSError, ValueError):
        record = {}
    config = record.get("config") or {}
    return {
        "task": (config.get("task") or {}).get("name", "?"),
        "attention": (config.get("attention") or {}).get("name", "?"),
        "seed": config.get("seed", "?"),
        "status": KILLED,
        "error": silent_end_reason(holder),
        "metrics": {},
        "options": record.get("options") or {},
        "config": config,
        "fingerprint": record.get("fingerprint"),
    }
