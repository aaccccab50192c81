"""Where the project's own files lie: the repository root and the Hydra config tree (``conf/``)."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
CONFIG_DIR = str(REPO_ROOT / "conf")
