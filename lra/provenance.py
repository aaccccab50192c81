"""Where, when and how a figure was measured: the machine, the code's commit and package versions, the
command that reruns it, markdown tables.

Imported by ``lra.report`` and the benchmarks of ``lra.bench``; torch is imported only by
``machine_description``, so the report never loads it.
"""

from __future__ import annotations

import os
import platform
import shlex
import subprocess
from collections.abc import Sequence
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo, or the platform's processor string elsewhere."""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


def machine_description(device: torch.device) -> list[str]:
    """Markdown bullet lines that say where and when a measurement on ``device`` was taken."""
    import torch

    gpu = f" ({torch.cuda.get_device_name(device)})" if device.type == "cuda" else ""
    return [
        f"- CPU: {cpu_model()}, {os.cpu_count()} logical cores (torch's default threads: "
        f"{torch.get_num_threads()})",
        f"- torch {torch.__version__}, Python {platform.python_version()}, {platform.system()} "
        f"{platform.release()}",
        f"- device: {device}{gpu}",
        f"- date: {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
        f"- load average (1/5/15 min) at the start: {' / '.join(f'{load:.1f}' for load in os.getloadavg())}",
    ]


REPO_DIR = Path(__file__).resolve().parents[1]  # the harness's checkout


def git_commit(repo: Path = REPO_DIR) -> str | None:
    """HEAD of the harness's checkout, ``-dirty`` appended when tracked files differ; None outside git."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()

    try:
        commit = git("rev-parse", "HEAD")
        return commit + ("-dirty" if git("status", "--porcelain", "--untracked-files=no") else "")
    except (OSError, subprocess.SubprocessError):
        return None


def installed_version(distribution: str) -> str | None:
    """The installed version of ``distribution``, None where it is not installed."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def checkout_line(name: str, code: Path) -> str:
    """A markdown bullet: the checkout ``code`` of ``name`` and its commit, read from the checkout."""
    commit = git_commit(code) if (code / ".git").exists() else None
    return f"- {name}: {code} at commit {commit or 'unknown (not a git checkout)'}"


def versions_line(label: str, distributions: Sequence[str]) -> str:
    """A markdown bullet: ``label``, then the installed version of each of ``distributions``."""
    return f"- {label}: " + ", ".join(
        f"{name} {installed_version(name) or 'not installed'}" for name in distributions
    )


def rerun_command(module: str, argv: Sequence[str]) -> str:
    """The exact command that reruns ``python -m module`` with ``argv``."""
    return shlex.join(["python", "-m", module, *argv])


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A GitHub markdown table; every cell is formatted with ``str``."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)
