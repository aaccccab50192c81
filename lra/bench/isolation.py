"""Where a benchmark measures each configuration: in this process or in a fresh interpreter.

``Isolation.measure(measure, failed, config)`` runs ``measure(config) -> row`` in this process or, for
``subprocess``, in ``python -m lra.bench.isolation`` (the pickled ``(measure, config)`` on stdin).
There no allocator cache from an earlier configuration shifts the peak memory, and an address-space
limit turns a too-large configuration into an ``oom`` row instead of a swapping machine; no result
within the timeout is ``timeout``, SIGKILL (the kernel's OOM killer) ``oom``, another non-zero exit
``error``, each made a row by ``failed(config, failure)``. ``run_all`` prints each row as it comes.
"""

from __future__ import annotations

import argparse
import math
import pickle
import re
import resource
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import torch

from lra.bench.timing import Failure, default_device
from lra.memory import proc_status_kb
from lra.paths import REPO_ROOT

WORKER = "lra.bench.isolation"
MEM_LIMIT_SHARE = 0.6  # default address-space limit per subprocess: this share of the available memory
Config = TypeVar("Config")
Row = TypeVar("Row")


def run_isolated(
    measure: Callable[[Config], Row], config: Config, timeout_s: float, mem_limit_mb: int | None
) -> Row | Failure:
    """``measure(config)`` in a fresh interpreter (``measure`` a module-level function): its row, or why
    there is none."""
    with tempfile.TemporaryDirectory() as folder:
        result = Path(folder) / "row.pickle"
        command = [sys.executable, "-m", WORKER, str(result)]
        if mem_limit_mb is not None:
            command += ["--mem-limit-mb", str(mem_limit_mb)]
        try:
            child = subprocess.run(
                command, input=pickle.dumps((measure, config)), capture_output=True, timeout=timeout_s,
                cwd=REPO_ROOT,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            return Failure("timeout", f"no result within {timeout_s:g} s")
        if child.returncode == -signal.SIGKILL:
            return Failure("oom", "killed by SIGKILL (out of memory)")
        if child.returncode != 0:
            stderr = child.stderr.decode(errors="replace").strip()
            return Failure("error", stderr[-300:] or f"exit status {child.returncode}")
        return pickle.loads(result.read_bytes())


def worker_main(argv: list[str]) -> None:
    """Child side of ``run_isolated``: unpickle ``(measure, config)`` from stdin (which imports the
    benchmark), limit the address space, pickle ``measure(config)`` to the result file."""
    parser = argparse.ArgumentParser(prog=f"python -m {WORKER}")
    parser.add_argument("result", type=Path, help="file the pickled row is written to")
    parser.add_argument("--mem-limit-mb", type=int, default=None)
    args = parser.parse_args(argv)
    measure, config = pickle.loads(sys.stdin.buffer.read())
    if args.mem_limit_mb is not None:  # map at most this much more than now: allocations beyond fail
        limit = proc_status_kb("VmSize") * 1024 + args.mem_limit_mb * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    args.result.write_bytes(pickle.dumps(measure(config)))


def run_all(
    configs: Iterable[Config], run_one: Callable[[Config], Row], progress: Callable[[Row], str]
) -> list[Row]:
    """``run_one`` of every configuration in order, each row's ``progress`` line printed as it comes."""
    rows = []
    for config in configs:
        rows.append(run_one(config))
        print(progress(rows[-1]), flush=True)
    return rows


def available_memory_mb() -> int:
    match = re.search(r"^MemAvailable:\s+(\d+) kB", Path("/proc/meminfo").read_text(), re.MULTILINE)
    if match is None:
        raise OSError("/proc/meminfo has no MemAvailable; pass --mem-limit-mb")
    return int(match.group(1)) // 1024


def add_run_arguments(parser: argparse.ArgumentParser, timeout_s: float) -> None:
    """The arguments of ``Isolation.from_args`` (``--timeout-s`` defaults to ``timeout_s``)."""
    add = parser.add_argument
    add("--device", default=None, help="cpu or cuda (default: cuda when available)")
    add("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    add(
        "--isolation",
        choices=("subprocess", "inprocess"),
        default=None,
        help="default: subprocess on CPU (each configuration in a fresh interpreter), inprocess on CUDA",
    )
    add("--timeout-s", type=float, default=timeout_s, help="per configuration (subprocess only)")
    add(
        "--mem-limit-mb",
        type=int,
        default=None,
        help="address-space limit per subprocess above its start (default on CPU: 60%% of available memory)",
    )


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
        device = default_device(args.device)
        mode = args.isolation or ("subprocess" if device.type == "cpu" else "inprocess")
        limit = args.mem_limit_mb
        if mode == "subprocess" and device.type == "cpu" and limit is None:
            limit = math.floor(MEM_LIMIT_SHARE * available_memory_mb())
        return cls(device, args.threads, mode, args.timeout_s, limit)

    def measure(
        self, measure: Callable[[Config], Row], failed: Callable[[Config, Failure], Row], config: Config
    ) -> Row:
        """The row of ``config``: ``measure(config)`` where ``mode`` says, or ``failed`` with why not."""
        if self.mode == "inprocess":
            return measure(config)
        result = run_isolated(measure, config, self.timeout_s, self.mem_limit_mb)
        return failed(config, result) if isinstance(result, Failure) else result

    def note(self) -> str:
        """How the configurations were isolated and threaded, for a page."""
        limit = f", address-space limit {self.mem_limit_mb} MB" if self.mem_limit_mb else ""
        return (
            f"Isolation: {self.mode}{limit}, timeout {self.timeout_s:g} s per configuration; "
            f"torch threads per measurement: {self.threads or 'torch default'}"
        )


if __name__ == "__main__":
    worker_main(sys.argv[1:])
