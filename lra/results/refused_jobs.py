"""A job that its config check refuses leaves no run behind: no folder under ``outputs/``, no summary.json.

Hydra makes a job's folder (its ``.hydra/`` record and its log) before the job starts; a job whose config
fails its check (``lra.job.checks.check_config``: a causal form the attention lacks, MQAR pairs that do
not fit, a vocabulary too small, rotary positions a core does not take, ...) removes that folder again,
with the folders above it that it leaves empty (``discard_job_folder``). A single run then stops with
one line and exit status 1. In a sweep the other jobs run; the refused one leaves a note in the sweep's
folder (``REFUSED_DIR``, beside the jobs' folders, never read as a run): a row of the sweep's table, with
the status ``refused`` and its reason (``refused_rows``), and the whole reason below the table
(``refused_lines``).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REFUSED_DIR = ".refused"  # in a sweep's folder: one note per job that its config check refused
HYDRA_RECORD = ".hydra"


def discard_job_folder(folder: Path, job_name: str, root: Path) -> bool:
    """Remove ``folder`` when it holds only what Hydra wrote for the job (``.hydra/`` and
    ``<job_name>.log``), then each folder above it up to ``root`` (not included) that is left empty.
    True when it was removed; a folder holding anything else (a run resumed there) stays."""
    made_by_hydra = {HYDRA_RECORD, f"{job_name}.log"}
    if not folder.is_dir() or any(entry.name not in made_by_hydra for entry in folder.iterdir()):
        return False
    shutil.rmtree(folder)
    for parent in folder.parents:
        if parent == root or root not in parent.parents or any(parent.iterdir()):
            break
        parent.rmdir()
    return True


REFUSED = "refused"  # the status of such a job in the sweep's table


def note_refused(
    sweep_dir: Path, number: int, overrides: Sequence[str], error: str, row: dict[str, Any]
) -> None:
    """Record that job ``number`` of the sweep in ``sweep_dir`` could not start, and why; ``row``: its
    ``task``, ``attention``, ``seed`` and swept ``options``, as the sweep's table shows a job."""
    notes = sweep_dir / REFUSED_DIR
    notes.mkdir(parents=True, exist_ok=True)
    record = {**row, "job": number, "overrides": list(overrides), "error": error, "status": REFUSED}
    (notes / f"{number}.json").write_text(json.dumps({**record, "metrics": {}}))


def refused_rows(sweep_dir: Path) -> list[dict[str, Any]]:
    """The notes of the sweep in ``sweep_dir``'s refused jobs, in job order, as rows of its table."""
    notes = sorted((sweep_dir / REFUSED_DIR).glob("*.json"), key=lambda path: int(path.stem))
    return [json.loads(path.read_text()) for path in notes]


def refused_error(sweep_dir: Path, number: int) -> str | None:
    """Why job ``number`` of the sweep in ``sweep_dir`` could not start, or None if it was not refused."""
    note = sweep_dir / REFUSED_DIR / f"{number}.json"
    return json.loads(note.read_text())["error"] if note.is_file() else None


def refused_lines(sweep_dir: Path) -> list[str]:
    """``#3 attention=performer model.position=rope could not start: ...``, a line per refused job of
    the sweep in ``sweep_dir``, in job order."""
    return [
        f"#{r['job']} {' '.join(r['overrides'])} could not start: {r['error']}"
        for r in refused_rows(sweep_dir)
    ]
