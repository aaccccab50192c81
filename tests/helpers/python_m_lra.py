"""``python -m lra ARGS`` in a subprocess, as a user runs it, with ``tests/`` importable (its callbacks)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent


def python_m_lra(args: list[str], cwd: Path, timeout: int = 240) -> subprocess.CompletedProcess:
    """Run ``python -m lra ARGS`` in ``cwd`` (one torch thread, Hydra's short errors) and return it."""
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "tests")]),
    }
    env.pop("HYDRA_FULL_ERROR", None)
    return subprocess.run(
        [sys.executable, "-m", "lra", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
