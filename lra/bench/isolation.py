"""The one runner of every benchmark: each configuration in this process or in a fresh interpreter.

A benchmark hands its configurations to a ``Runner``: ``measure(config) -> row`` (one configuration in
this process), ``progress(row) -> str`` (its line on stdout) and, to run in subprocesses,
``failed(config, failure) -> row`` (the row of a configuration without a figure). With
``--isolation subprocess`` each configuration runs in
``python -m lra.bench.isolation RESULT_FILE [--mem-limit-mb N]``, which reads the pickled
``(measure, config)`` from stdin and pickles ``measure(config)`` to ``RESULT_FILE``; what can go wrong
there becomes a ``Failure``: no result within the timeout (``timeout``), the child killed by SIGKILL,
the kernel's OOM killer (``oom``), any other non-zero exit (``error``). In a fresh process no
allocator cache or fragmentation from an earlier configuration shifts the peak memory, and the
address-space limit turns a too-large configuration into an allocation failure (``oom``) instead of a
swapping machine.
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
from typing import Generic, TypeVar

import torch

from lra.bench.timing import Failure
from lra.memory import proc_status_kb

REPO_ROOT = Path(__file__).resolve().parents[2]
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


def limit_address_space(extra_mb: int) -> None:
    """Let this process map at most ``extra_mb`` MiB more than it has now (allocations beyond fail)."""
    limit = proc_status_kb("VmSize") * 1024 + extra_mb * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def worker_main(argv: list[str]) -> None:
    """Child side of ``run_isolated``: unpickle ``(measure, config)`` from stdin (which imports the
    benchmark), limit the address space, pickle ``measure(config)`` to the result file."""
    parser = argparse.ArgumentParser(prog=f"python -m {WORKER}")
    parser.add_argument("result", type=Path, help="file the pickled row is written to")
    parser.add_argument("--mem-limit-mb", type=int, default=None)
    args = parser.parse_args(argv)
    measure, config = pickle.loads(sys.stdin.buffer.read())
    if args.mem_limit_mb is not None:
        limit_address_space(args.mem_limit_mb)
    args.result.write_bytes(pickle.dumps(measure(config)))


@dataclass(frozen=True)
class Runner(Generic[Config, Row]):
    """How one benchmark measures a configuration, and where (``isolation``: ``inprocess`` or
    ``subprocess`` with ``timeout_s`` and ``mem_limit_mb``)."""

    measure: Callable[[Config], Row]
    progress: Callable[[Row], str]
    failed: Callable[[Config, Failure], Row] | None = None
    isolation: str = "inprocess"
    timeout_s: float = math.inf
    mem_limit_mb: int | None = None

    def __call__(self, config: Config) -> Row:
        """The row of ``config``, measured where ``isolation`` says."""
        if self.isolation == "inprocess":
            return self.measure(config)
        if self.failed is None:
            raise ValueError("a Runner needs `failed` to run configurations in subprocesses")
        result = run_isolated(self.measure, config, self.timeout_s, self.mem_limit_mb)
        return self.failed(config, result) if isinstance(result, Failure) else result

    def run_all(self, configs: Iterable[Config]) -> list[Row]:
        """Every configuration in order, each row's progress line printed as it comes."""
        rows = []
        for config in configs:
            rows.append(self(config))
            print(self.progress(rows[-1]), flush=True)
        return rows


def available_memory_mb() -> int:
    match = re.search(r"^MemAvailable:\s+(\d+) kB", Path("/proc/meminfo").read_text(), re.MULTILINE)
    if match is None:
        raise OSError("/proc/meminfo has no MemAvailable; pass --mem-limit-mb")
    return int(match.group(1)) // 1024


def add_run_arguments(parser: argparse.ArgumentParser, timeout_s: float) -> None:
    """``--device``, ``--threads`` and the isolation's ``--isolation``, ``--timeout-s`` (default
    ``timeout_s``) and ``--mem-limit-mb``: the arguments of a benchmark that times steps."""
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


def isolation_note(args: argparse.Namespace) -> str:
    """How the configurations of a run were isolated, for its markdown page."""
    limit = f", address-space limit {args.mem_limit_mb} MB" if args.mem_limit_mb else ""
    return f"Isolation: {args.isolation}{limit}, timeout {args.timeout_s:g} s per configuration"


def isolated_runner(
    args: argparse.Namespace,
    device: torch.device,
    measure: Callable[[Config], Row],
    progress: Callable[[Row], str],
    failed: Callable[[Config, Failure], Row],
) -> Runner[Config, Row]:
    """The ``Runner`` of a benchmark with ``add_run_arguments``; the defaults that depend on
    ``device`` are filled in ``args`` (subprocess and a memory limit on CPU, in-process on CUDA)."""
    args.isolation = args.isolation or ("subprocess" if device.type == "cpu" else "inprocess")
    if args.isolation == "subprocess" and device.type == "cpu" and args.mem_limit_mb is None:
        args.mem_limit_mb = math.floor(MEM_LIMIT_SHARE * available_memory_mb())
    return Runner(measure, progress, failed, args.isolation, args.timeout_s, args.mem_limit_mb)


if __name__ == "__main__":
    worker_main(sys.argv[1:])
