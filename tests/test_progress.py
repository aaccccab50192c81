"""``python -m lra.report --progress``: jobs completed, running, interrupted and failed per task ×
attention, on a hand-made sweep folder."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from lra.report.cli import main
from lra.report.progress import ACTIVE_SECONDS


def job(sweep: Path, name: str, attention: str, landmarks: int, status: str | None, age_s: float = 0) -> Path:
    """A job folder with run.json (and summary.json when ``status``), its files ``age_s`` seconds old."""
    folder = sweep / name
    (folder / "csv").mkdir(parents=True)
    config = {"task": {"name": "listops"}, "attention": {"name": attention}}
    options = {"attention.num_landmarks": str(landmarks)}
    (folder / "run.json").write_text(json.dumps({"config": config, "options": options}))
    (folder / "csv" / "metrics.csv").write_text("step\n")
    if status is not None:
        summary = {"task": "listops", "attention": attention, "status": status, "options": options}
        (folder / "summary.json").write_text(json.dumps(summary))
    moment = time.time() - age_s
    for path in folder.rglob("*"):
        os.utime(path, (moment, moment))
    return folder


def test_progress_counts_each_state_per_task_and_attention(tmp_path, capsys):
    sweep = tmp_path / "sweep"
    done = job(tmp_path / "earlier", "0_listops-nystrom-num_landmarks=8-s0", "nystrom", 8, "completed")
    (sweep / "0_listops-nystrom-num_landmarks=8-s1").mkdir(parents=True)  # a skipped job: a pointer
    (sweep / "0_listops-nystrom-num_landmarks=8-s1" / "resumed.json").write_text(
        json.dumps({"continues": str(done)})
    )
    job(sweep, "1_listops-nystrom-num_landmarks=8-s2", "nystrom", 8, None)  # training now
    job(
        sweep, "2_listops-nystrom-num_landmarks=16-s0", "nystrom", 16, None, age_s=2 * ACTIVE_SECONDS
    )  # killed
    job(sweep, "3_listops-nystrom-num_landmarks=16-s1", "nystrom", 16, "interrupted", age_s=60)
    job(sweep, "4_listops-skyformer-num_landmarks=8-s0", "skyformer", 8, "nan")
    job(sweep, "5_listops-skyformer-num_landmarks=8-s1", "skyformer", 8, "failed")

    assert main(["--progress", "--runs", str(sweep)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == "| task | attention | completed | running | interrupted | failed |"
    assert lines[2:] == [
        "| listops | nystrom (num_landmarks=16) | 0 | 0 | 2 | 0 |",
        "| listops | nystrom (num_landmarks=8) | 1 | 1 | 0 | 0 |",
        "| listops | skyformer (num_landmarks=8) | 0 | 0 | 0 | 2 |",
        "| all |  | 1 | 1 | 2 | 2 |",
    ]
    assert not (tmp_path / "results").exists()  # --progress writes no report


def test_progress_of_a_folder_without_jobs_says_so(tmp_path):
    with pytest.raises(FileNotFoundError, match="no job folders"):
        main(["--progress", "--runs", str(tmp_path)])
