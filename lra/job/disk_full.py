"""A full disk as one line: which file could not be written, the last checkpoint that verifies, and
what to do (``disk_full_line``). Whatever write first hit it (a checkpoint, metrics.csv,
summary.json), the errors that follow while the run stops are the same full disk."""

from __future__ import annotations

import errno
from pathlib import Path

from lra.job.checkpoint_files import CHECKPOINT_DIR, newest_verified


def disk_full_errors(error: BaseException) -> list[OSError]:
    """The "no space left" ``OSError``s (ENOSPC, EDQUOT) in ``error`` and the errors it was raised from
    or while handling, the first one raised first."""
    found: list[OSError] = []
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in (errno.ENOSPC, errno.EDQUOT):
            found.append(current)
        current = current.__cause__ or current.__context__
    return found[::-1]


def disk_full_line(errors: list[OSError], run_dir: Path) -> str:
    """The one line of a run in ``run_dir`` stopped by ``errors`` (``disk_full_errors``, not empty):
    the first file named, else the run folder."""
    named = [error.filename for error in errors if error.filename is not None]
    good, _ = newest_verified(run_dir / CHECKPOINT_DIR)
    return (
        f"no space left on device writing {named[0] if named else run_dir}; "
        f"the last good checkpoint is {good or 'none'}; free space, then resume=auto"
    )
