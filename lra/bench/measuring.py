"""How every benchmark measures a configuration: the median time and peak memory of a repeated step
(``measure_step``; the probes say how memory is read), in this process or in a fresh interpreter
(``Isolation``: ``python -m lra.bench.measuring`` takes the pickled job on stdin), where no allocator
cache of an earlier configuration shifts the peak and an address-space limit turns a too-large
configuration into an ``oom`` row instead of a swapping machine. A step that fails, runs past its
timeout or is killed is a ``Failure`` with a status (``oom``, ``timeout``, ``error``), not a crash."""

from __future__ import annotations

import argparse
import math
import pickle
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import torch

from lra.config.paths import REPO_ROOT
from lra.job.memory import cpu_free, proc_status_kb, reset_peak_rss
from lra.one_line import one_line

Step = Callable[[], None]
WORKER = "lra.bench.measuring"
MEM_LIMIT_SHARE = 0.6  # default address-space limit per subprocess: this share of the available memory
Config = TypeVar("Config")
Row = TypeVar("Row")


@dataclass(frozen=True)
class Failure:
    """A configuration without a figure: ``status`` ``oom``, ``timeout`` or ``error``, ``detail`` why;
    read as a ``StepTimes`` it has no time, no memory and no timed step."""

    status: str
    detail: str
    median_ms, peak_mb, timed_steps = None, None, 0


@dataclass(frozen=True)
class StepTimes:
    """The median wall time of the timed steps (ms), how many there were and the peak memory above the
    probe's baseline (MB); its ``status`` is ``ok``, as a row of figures says."""

    median_ms: float
    timed_steps: int
    peak_mb: float
    status, detail = "ok", ""


Outcome = StepTimes | Failure  # what a timed configuration gives, read the same way either way


class CpuProbe:
    method, baseline = "peak RSS (VmHWM, reset via /proc/self/clear_refs)", "the RSS"

    def synchronize(self) -> None:
        """CPU work is synchronous."""

    def start(self) -> None:
        if not reset_peak_rss():
            raise OSError("cannot reset the peak RSS (/proc/self/clear_refs); CPU memory needs Linux")
        self.baseline_kb = proc_status_kb("VmRSS")

    def peak_mb(self) -> float:
        return (proc_status_kb("VmHWM") - self.baseline_kb) / 1024


class CudaProbe:
    method, baseline = "torch.cuda.max_memory_allocated", "memory_allocated"

    def synchronize(self) -> None:
        torch.cuda.synchronize()

    def start(self) -> None:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        self.baseline_bytes = torch.cuda.memory_allocated()

    def peak_mb(self) -> float:
        return (torch.cuda.max_memory_allocated() - self.baseline_bytes) / 2**20


PROBES: dict[str, type[CpuProbe] | type[CudaProbe]] = {"cpu": CpuProbe, "cuda": CudaProbe}


def elapsed_ms(step: Step, synchronize: Step = lambda: None) -> float:
    """The wall time of ``step()`` in ms, between two ``synchronize()`` (a device's queued work)."""
    synchronize()
    begin = time.perf_counter()
    step()
    synchronize()
    return 1000 * (time.perf_counter() - begin)


def measure_step(
    build: Callable[[], Step], device: torch.device, warmup: int, repeats: int, budget_s: float | None = None
) -> Outcome:
    """``build()`` a step, start the probe, run ``warmup`` untimed steps, then up to ``repeats`` timed ones
    (stop once past ``budget_s``); an exception while building or stepping is a ``Failure``."""
    try:
        step, probe = build(), PROBES[device.type]()
        probe.start()
        for _ in range(warmup):
            step()
        times: list[float] = []
        budget_ms = math.inf if budget_s is None else 1000 * budget_s
        while len(times) < repeats and (not times or sum(times) < budget_ms):
            times.append(elapsed_ms(step, probe.synchronize))
        return StepTimes(statistics.median(times), len(times), probe.peak_mb())
    except Exception as error:  # a failing configuration is a result, not a crash
        out_of_memory = (torch.OutOfMemoryError, MemoryError)
        oom = isinstance(error, out_of_memory) or "can't allocate memory" in str(error)  # the CPU allocator's
        return Failure("oom" if oom else "error", one_line(f"{type(error).__name__}: {error}", 300))
    finally:
        if device.type == "cuda":
            torch.cuda.empty_cache()


def run_job(
    measure: Callable[[Config], Row], config: Config, threads: int | None, mem_limit_mb: int | None
) -> Row:
    """``measure(config)`` with ``threads`` torch threads (None: torch's choice), in an address space
    limited to ``mem_limit_mb`` more than now (None: no limit)."""
    if threads is not None:
        torch.set_num_threads(threads)
    if mem_limit_mb is not None:  # map at most this much more than now: allocations beyond fail
        limit = proc_status_kb("VmSize") * 1024 + mem_limit_mb * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return measure(config)


def run_all(
    configs: Iterable[Config], run_one: Callable[[Config], Row], progress: Callable[[Row], str]
) -> list[Row]:
    """``run_one`` of every configuration in order, each row's ``progress`` line printed as it comes."""
    rows = []
    for config in configs:
        rows.append(run_one(config))
        print(progress(rows[-1]), flush=True)
    return rows


def add_run_arguments(parser: argparse.ArgumentParser, timeout_s: float) -> None:
    """The arguments of ``Isolation.from_args`` (``--timeout-s`` defaults to ``timeout_s``)."""
    add = parser.add_argument
    add("--device", help="cpu or cuda (default: cuda when available)")
    add("--threads", type=int, help="torch threads (default: torch's choice)")
    add("--isolation", choices=("subprocess", "inprocess"), help="default: subprocess on CPU, else inprocess")
    add("--timeout-s", type=float, default=timeout_s, help="per configuration (subprocess only)")
    add("--mem-limit-mb", type=int, help="address-space limit of a subprocess (CPU: 60%% of free memory)")


@dataclass(frozen=True)
class Isolation:
    """Where a run measures: ``device`` with ``threads`` torch threads (None: torch's choice), each
    configuration ``inprocess`` or in a ``subprocess`` (``mode``) with ``timeout_s`` and ``mem_limit_mb``."""

    device: torch.device
    threads: int | None = None
    mode: str = "inprocess"
    timeout_s: float = math.inf
    mem_limit_mb: int | None = None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Isolation:
        """The arguments of ``add_run_arguments``, with the defaults that depend on the device: a
        subprocess with a memory limit on CPU, in-process on CUDA."""
        device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
        mode = args.isolation or ("subprocess" if device.type == "cpu" else "inprocess")
        limit = args.mem_limit_mb
        if mode == "subprocess" and device.type == "cpu" and limit is None:
            free = cpu_free()  # MemAvailable, or less where the cgroup's memory.max leaves less
            if free is None:
                raise OSError("cannot read MemAvailable from /proc/meminfo; pass --mem-limit-mb")
            limit = math.floor(MEM_LIMIT_SHARE * (free[0] // 2**20))
        return cls(device, args.threads, mode, args.timeout_s, limit)

    def measure(
        self, measure: Callable[[Config], Row], failed: Callable[[Config, Failure], Row], config: Config
    ) -> Row:
        """The row of ``config``: ``measure(config)`` (a module-level function) where ``mode`` says, with
        ``threads`` torch threads, or ``failed(config, failure)`` when a subprocess gives no row."""
        if self.mode == "inprocess":
            return run_job(measure, config, self.threads, None)
        with tempfile.TemporaryDirectory() as folder:
            result = Path(folder) / "row.pickle"
            command = [sys.executable, "-m", WORKER, str(result)]
            job = pickle.dumps((measure, config, self.threads, self.mem_limit_mb))
            try:
                child = subprocess.run(
                    command, input=job, capture_output=True, timeout=self.timeout_s, cwd=REPO_ROOT
                )
            except subprocess.TimeoutExpired:
                return failed(config, Failure("timeout", f"no result within {self.timeout_s:g} s"))
            if child.returncode == -signal.SIGKILL:
                return failed(config, Failure("oom", "killed by SIGKILL (out of memory)"))
            if child.returncode != 0:
                stderr = child.stderr.decode(errors="replace").strip()
                return failed(config, Failure("error", stderr[-300:] or f"exit status {child.returncode}"))
            return pickle.loads(result.read_bytes())

    def note(self) -> str:
        """How the configurations were isolated and threaded, for a page."""
        limit = f", address-space limit {self.mem_limit_mb} MB" if self.mem_limit_mb else ""
        threads = f"torch threads per measurement: {self.threads or 'torch default'}"
        return f"Isolation: {self.mode}{limit}, timeout {self.timeout_s:g} s per configuration; {threads}"


if __name__ == "__main__":  # the child of ``Isolation.measure``: its pickled job on stdin, its row to argv[1]
    Path(sys.argv[1]).write_bytes(pickle.dumps(run_job(*pickle.loads(sys.stdin.buffer.read()))))
