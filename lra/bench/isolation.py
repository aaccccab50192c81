"""Each benchmark configuration in a fresh interpreter, with a timeout and an address-space limit.

A benchmark module that can be isolated is also a worker: ``python -m lra.bench.<benchmark>
CONFIG_JSON [--mem-limit-mb N]`` measures one configuration and prints its result as the last line of
stdout, one JSON object (``worker_main``). ``run_isolated`` starts such a worker and turns what can
go wrong into a ``Failure``: no result within the timeout (``timeout``), the child killed by SIGKILL,
the kernel's OOM killer (``oom``), any other non-zero exit (``error``). In a fresh process no
allocator cache or fragmentation from an earlier configuration shifts the peak memory, and the
address-space limit turns a too-large configuration into an allocation failure (``oom``) instead of a
swapping machine.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import resource
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import torch

from lra.bench.timing import Failure
from lra.memory import proc_status_kb

REPO_ROOT = Path(__file__).resolve().parents[2]
Config = TypeVar("Config")
Row = TypeVar("Row")
MEM_LIMIT_SHARE = 0.6  # default address-space limit per subprocess: this share of the available memory


def run_isolated(
    module: str, config: dict[str, Any], timeout_s: float, mem_limit_mb: int | None
) -> dict[str, Any] | Failure:
    """``python -m module CONFIG_JSON`` in a fresh interpreter: its JSON result, or why there is none."""
    command = [sys.executable, "-m", module, json.dumps(config)]
    if mem_limit_mb is not None:
        command += ["--mem-limit-mb", str(mem_limit_mb)]
    try:
        child = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, cwd=REPO_ROOT)
    except subprocess.TimeoutExpired:
        return Failure("timeout", f"no result within {timeout_s:g} s")
    if child.returncode == -signal.SIGKILL:
        return Failure("oom", "killed by SIGKILL (out of memory)")
    if child.returncode != 0:
        return Failure("error", child.stderr.strip()[-300:] or f"exit status {child.returncode}")
    return json.loads(child.stdout.strip().splitlines()[-1])


def limit_address_space(extra_mb: int) -> None:
    """Let this process map at most ``extra_mb`` MiB more than it has now (allocations beyond fail)."""
    limit = proc_status_kb("VmSize") * 1024 + extra_mb * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def worker_main(
    argv: Sequence[str], module: str, measure: Callable[[dict[str, Any]], dict[str, Any]]
) -> None:
    """Child side of ``run_isolated``: ``measure(config)`` printed as one JSON line."""
    parser = argparse.ArgumentParser(prog=f"python -m {module}")
    parser.add_argument("config", help="the configuration as JSON")
    parser.add_argument("--mem-limit-mb", type=int, default=None)
    args = parser.parse_args(argv)
    config = json.loads(args.config)
    if args.mem_limit_mb is not None:
        limit_address_space(args.mem_limit_mb)
    print(json.dumps(measure(config)), flush=True)


def available_memory_mb() -> int:
    match = re.search(r"^MemAvailable:\s+(\d+) kB", Path("/proc/meminfo").read_text(), re.MULTILINE)
    if match is None:
        raise OSError("/proc/meminfo has no MemAvailable; pass --mem-limit-mb")
    return int(match.group(1)) // 1024


def add_isolation_arguments(parser: argparse.ArgumentParser, timeout_s: float) -> None:
    """``--isolation``, ``--timeout-s`` (default ``timeout_s``) and ``--mem-limit-mb``."""
    parser.add_argument(
        "--isolation",
        choices=("subprocess", "inprocess"),
        default=None,
        help="default: subprocess on CPU (each configuration in a fresh interpreter), inprocess on CUDA",
    )
    parser.add_argument(
        "--timeout-s", type=float, default=timeout_s, help="per configuration (subprocess only)"
    )
    parser.add_argument(
        "--mem-limit-mb",
        type=int,
        default=None,
        help="address-space limit per subprocess above its start (default on CPU: 60%% of available memory)",
    )


def settle_isolation(args: argparse.Namespace, device: torch.device) -> None:
    """Fill in the defaults of ``add_isolation_arguments`` that depend on ``device`` (in ``args``)."""
    args.isolation = args.isolation or ("subprocess" if device.type == "cpu" else "inprocess")
    if args.isolation == "subprocess" and device.type == "cpu" and args.mem_limit_mb is None:
        args.mem_limit_mb = math.floor(MEM_LIMIT_SHARE * available_memory_mb())


def isolation_note(args: argparse.Namespace) -> str:
    """How the configurations of a run were isolated, for its markdown page."""
    limit = f", address-space limit {args.mem_limit_mb} MB" if args.mem_limit_mb else ""
    return f"Isolation: {args.isolation}{limit}, timeout {args.timeout_s:g} s per configuration"


def runner(
    args: argparse.Namespace,
    measure: Callable[[Config], Row],
    measure_in_subprocess: Callable[[Config, float, int | None], Row],
) -> Callable[[Config], Row]:
    """``measure`` (this process), or ``measure_in_subprocess`` with the timeout and memory limit of
    ``args`` when ``args.isolation`` is ``subprocess``."""
    if args.isolation == "subprocess":
        return partial(measure_in_subprocess, timeout_s=args.timeout_s, mem_limit_mb=args.mem_limit_mb)
    return measure
