"""Resident memory of this process (Linux ``/proc/self/status``) and the memory free on the machine
(``cpu_free``), without torch or Lightning.

Used by the training callbacks (``perf/peak_rss_mb``), the check before a run (``lra.job.score_memory``)
and the benchmarks' subprocesses, which must stay light to import; the benchmarks also count page
faults and can keep the C heap from shrinking.
"""

from __future__ import annotations

import ctypes
import re
import resource
import sys
from pathlib import Path

PROC_STATUS = Path("/proc/self/status")
PROC_CLEAR_REFS = Path("/proc/self/clear_refs")
MEMINFO = Path("/proc/meminfo")
CGROUP_MEMORY = Path("/sys/fs/cgroup")  # cgroup v2: memory.max and memory.current


def proc_status_kb(field: str) -> int:
    """A ``kB`` field of /proc/self/status (``VmRSS``, ``VmHWM``, ``VmSize``); ``OSError`` off Linux."""
    try:
        status = PROC_STATUS.read_text()
    except OSError as error:
        raise OSError(f"{PROC_STATUS} is unreadable ({error}); process memory is read on Linux") from None
    match = re.search(rf"^{field}:\s+(\d+) kB", status, re.MULTILINE)
    if match is None:
        raise OSError(f"{PROC_STATUS} has no {field}; process memory is read on Linux only")
    return int(match.group(1))


def reset_peak_rss() -> bool:
    """Restart the peak resident-set-size count at the current RSS (Linux: clear_refs 5).

    Returns False where the OS does not allow it (the peak then counts from the process start).
    """
    try:
        PROC_CLEAR_REFS.write_text("5")
    except OSError:
        return False
    return True


def peak_rss_mb() -> float:
    """Peak resident memory of this process in MiB: since ``reset_peak_rss`` on Linux, else since start."""
    try:
        return proc_status_kb("VmHWM") / 1024
    except OSError:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS
        return peak / 2**20 if sys.platform == "darwin" else peak / 1024


def cpu_free() -> tuple[int, str] | None:
    """(bytes free, where read) on the CPU, None where /proc/meminfo is unreadable."""
    try:
        fields = dict(line.split(":", 1) for line in MEMINFO.read_text().splitlines() if ":" in line)
        free, where = int(fields["MemAvailable"].split()[0]) * 1024, f"MemAvailable, {MEMINFO}"
    except (OSError, KeyError, ValueError):
        return None
    try:
        limit = (CGROUP_MEMORY / "memory.max").read_text().strip()
        used = int((CGROUP_MEMORY / "memory.current").read_text())
    except (OSError, ValueError):
        return free, where
    if limit != "max" and int(limit) - used < free:
        return int(limit) - used, f"the cgroup's memory.max less memory.current, {CGROUP_MEMORY}"
    return free, where


def minor_page_faults() -> int:
    """Minor page faults of this process so far: pages the kernel mapped (and zeroed) on first touch."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


# glibc's mallopt parameters (malloc.h)
M_TRIM_THRESHOLD, M_MMAP_MAX = -1, -4


def keep_freed_heap() -> bool:
    """Make glibc's malloc keep freed memory for reuse: no block served by its own mmap (freed, it is
    unmapped) and no trimming of the heap's top. A process that frees and re-allocates large buffers
    each step then stops taking a page fault per 4 KiB on every new buffer; its resident memory stays
    at its peak. False where the C library is not glibc (macOS) or refuses: nothing changed then.
    """
    libc = ctypes.CDLL(None)  # the symbols this process already has: its C library's among them
    if not hasattr(libc, "mallopt") or not hasattr(libc, "gnu_get_libc_version"):
        return False
    return bool(libc.mallopt(M_MMAP_MAX, 0) and libc.mallopt(M_TRIM_THRESHOLD, 2**31 - 1))
