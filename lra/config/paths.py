"""Where the project's own files lie (the repository root, the Hydra config tree ``conf/``), and the
output folders the commands write."""

from __future__ import annotations

import os
from pathlib import Path

from lra.config.errors import OutputFolderError

REPO_ROOT = Path(__file__).resolve().parents[2]
CONFIG_DIR = str(REPO_ROOT / "conf")


def writable_folder(folder: Path, option: str) -> Path:
    """``folder``, created if missing; ``OutputFolderError`` (one line naming ``option``, the option
    that chooses it) when it cannot be created or written."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if not os.access(folder, os.W_OK):
            raise PermissionError(13, os.strerror(13), str(folder))
    except OSError as error:
        raise OutputFolderError.of(error, option) from None
    return folder
