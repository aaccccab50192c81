"""Which runs a report or a progress count covers: ``--since DATE``, ``--match GLOB`` and
``--exclude-failed`` of ``python -m lra.report``.

A run is chosen when it started at or after ``since`` (a date or a date and time, local time unless it
says otherwise; a run's ``started`` from its summary.json, else the time its folder's run.json or
summary.json was written), when its folder's path matches one of the globs (``fnmatch``: ``*`` crosses
``/``, so ``'*nystrom*'`` and ``'multirun/2025-06-*'`` both work), and, with ``exclude_failed``, when it
did not fail (``failed``, ``nan``, or an unreadable summary.json).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from fnmatch import fnmatch
from pathlib import Path

from lra.job.run_identity import RUN_FILE
from lra.results.summary_json import SUMMARY_FILE

FAILED = ("failed", "nan", "unreadable")


def parse_since(text: str) -> datetime:
    """``--since``'s value as an aware datetime (local time when it names no zone)."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a date: give YYYY-MM-DD or YYYY-MM-DDTHH:MM (e.g. 2025-06-01T09:30)"
        ) from None
    return moment.astimezone()


def started_at(started: str, folder: Path) -> datetime | None:
    """When a run started: its summary's ``started`` (ISO), else when its folder's first record was
    written; None when neither is known."""
    try:
        return datetime.fromisoformat(started).astimezone()
    except ValueError:
        records = (folder / RUN_FILE, folder / SUMMARY_FILE)
        written = [path.stat().st_mtime for path in records if path.is_file()]
        return datetime.fromtimestamp(min(written)).astimezone() if written else None


@dataclass(frozen=True)
class Selection:
    """The runs chosen (module docstring); the default chooses every run."""

    since: datetime | None = None
    globs: tuple[str, ...] = ()
    exclude_failed: bool = False

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Selection:
        return cls(args.since, tuple(args.match or ()), args.exclude_failed)

    def picks(self, folders: Sequence[Path], status: str, started: str = "") -> bool:
        """Whether a run is chosen: ``folders`` the folder(s) that hold it (a sweep's job folder and the
        run it continued), ``status`` its state, ``started`` its summary's start time."""
        if self.exclude_failed and status in FAILED:
            return False
        if self.globs and not any(fnmatch(str(f), glob) for f in folders for glob in self.globs):
            return False
        if self.since is None:
            return True
        moment = started_at(started, folders[0])
        return moment is not None and moment >= self.since

    def describe(self) -> str:
        """In words, for the report's header ("" when every run is chosen)."""
        parts = [f"started since {self.since.isoformat(timespec='minutes')}"] if self.since else []
        parts += [f"in a folder matching {' or '.join(map(repr, self.globs))}"] if self.globs else []
        parts += ["failed jobs left out (--exclude-failed)"] if self.exclude_failed else []
        return "; ".join(parts)


def add_selection_arguments(parser: argparse.ArgumentParser) -> None:
    """``--since``, ``--match`` and ``--exclude-failed``."""
    add = parser.add_argument
    add("--since", type=parse_since, metavar="DATE",
        help="only runs started at or after DATE (YYYY-MM-DD or YYYY-MM-DDTHH:MM, local time)")  # fmt: skip
    add("--match", nargs="+", metavar="GLOB",
        help="only runs whose folder path matches one of these globs, e.g. '*nystrom*'")  # fmt: skip
    add("--exclude-failed", action="store_true",
        help="leave out failed and NaN jobs (and unreadable summaries): tables and --progress")  # fmt: skip
