"""Median time and peak memory of a repeated step on CPU or CUDA, shared by the benchmarks.

``measure_step(build, device, ...)`` builds a step (one unit of work, e.g. forward+backward), starts
the device's memory probe, runs ``warmup`` untimed steps, then times up to ``repeats`` steps (fewer
once they add up to ``budget_s``, at least one). CUDA: synchronised timing, ``max_memory_allocated``
above the probe's start; CPU: wall time, the peak RSS (VmHWM, reset through /proc/self/clear_refs)
above the RSS at the probe's start. A step that fails is a ``Failure`` with a status, not a crash.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from lra.memory import proc_status_kb, reset_peak_rss

Step = Callable[[], None]


@dataclass(frozen=True)
class Failure:
    """A configuration without a figure: ``status`` ``oom``, ``timeout`` or ``error``, ``detail`` why."""

    status: str
    detail: str


@dataclass(frozen=True)
class StepTimes:
    """Wall times of the timed steps (ms) and the peak memory above the probe's baseline (MB)."""

    times_ms: list[float]
    peak_mb: float

    @property
    def median_ms(self) -> float:
        return statistics.median(self.times_ms)


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


def default_device(name: str | None) -> torch.device:
    """``name``, or CUDA when it is available, else the CPU."""
    return torch.device(name or ("cuda" if torch.cuda.is_available() else "cpu"))


def is_out_of_memory(error: BaseException) -> bool:
    """True for CUDA OOM, Python's MemoryError and the CPU allocator's failure."""
    if isinstance(error, (torch.OutOfMemoryError, MemoryError)):
        return True
    return isinstance(error, RuntimeError) and "can't allocate memory" in str(error)


def measure_step(
    build: Callable[[], Step],
    device: torch.device,
    warmup: int,
    repeats: int,
    budget_s: float | None = None,
    threads: int | None = None,
) -> StepTimes | Failure:
    """With ``threads`` torch threads (None: as they are), ``build()`` a step, start the probe, run
    ``warmup`` untimed steps, then up to ``repeats`` timed ones (stop once past ``budget_s``); an
    exception while building or stepping is a ``Failure``."""
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        step, probe = build(), PROBES[device.type]()
        probe.start()
        for _ in range(warmup):
            step()
        times: list[float] = []
        budget_ms = math.inf if budget_s is None else 1000 * budget_s
        while len(times) < repeats and (not times or sum(times) < budget_ms):
            probe.synchronize()
            begin = time.perf_counter()
            step()
            probe.synchronize()
            times.append(1000 * (time.perf_counter() - begin))
        return StepTimes(times, probe.peak_mb())
    except Exception as error:  # a failing configuration is a result, not a crash
        status = "oom" if is_out_of_memory(error) else "error"
        return Failure(status, f"{type(error).__name__}: {error}"[:300])
    finally:
        if device.type == "cuda":
            torch.cuda.empty_cache()
