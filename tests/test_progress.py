"""``python -m lra.report --progress``: jobs completed, running, interrupted, killed and failed per task ×
attention, and why each unfinished job stopped, on hand-made sweep folders."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from lra.one_line import ELLIPSIS
from lra.report.cli import main
from lra.report.progress import ACTIVE_SECONDS, NO_SUMMARY, REASON_WIDTH


def job(
    sweep: Path,
    name: str,
    attention: str,
    landmarks: int,
    status: str | None,
    age_s: float = 0,
    error: str | None = None,
) -> Path:
    """A job folder with run.json (and summary.json when ``status``, with ``error``), its files ``age_s``
    seconds old."""
    folder = sweep / name
    (folder / "csv").mkdir(parents=True)
    config = {"task": {"name": "listops"}, "attention": {"name": attention}}
    options = {"attention.num_landmarks": str(landmarks)}
    (folder / "run.json").write_text(json.dumps({"config": config, "options": options}))
    (folder / "csv" / "metrics.csv").write_text("step\n")
    if status is not None:
        summary = {"task": "listops", "attention": attention, "status": status, "options": options}
        summary["error"] = error
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
    )  # ended on a host this cannot look at (no run lock)
    stopped = "SIGTERM at step 5; the state is saved in checkpoints: resume=auto continues"
    job(sweep, "3_listops-nystrom-num_landmarks=16-s1", "nystrom", 16, "interrupted", age_s=60, error=stopped)
    job(sweep, "4_listops-skyformer-num_landmarks=8-s0", "skyformer", 8, "nan", error="loss is NaN at step 3")
    long_reason = "cannot build the model: " + "a reason of many words " * 8
    job(sweep, "5_listops-skyformer-num_landmarks=8-s1", "skyformer", 8, "failed", error=long_reason)

    assert main(["--progress", "--runs", str(sweep)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == "| task | attention | completed | running | interrupted | killed | failed |"
    assert lines[2:6] == [
        "| listops | nystrom (num_landmarks=16) | 0 | 0 | 2 | 0 | 0 |",
        "| listops | nystrom (num_landmarks=8) | 1 | 1 | 0 | 0 | 0 |",
        "| listops | skyformer (num_landmarks=8) | 0 | 0 | 0 | 0 | 2 |",
        "| all |  | 1 | 1 | 2 | 0 | 2 |",
    ]
    assert lines[6:9] == [
        "",
        "Why jobs did not complete:",
        f"- sweep/2_listops-nystrom-num_landmarks=16-s0 (interrupted): {NO_SUMMARY}",
    ]
    assert lines[9:11] == [
        f"- sweep/3_listops-nystrom-num_landmarks=16-s1 (interrupted): {stopped}",
        "- sweep/4_listops-skyformer-num_landmarks=8-s0 (failed): loss is NaN at step 3",
    ]
    prefix = "- sweep/5_listops-skyformer-num_landmarks=8-s1 (failed): "
    assert lines[11].startswith(prefix) and len(lines) == 12
    kept = lines[11].removeprefix(prefix).removesuffix(ELLIPSIS)  # whole words only
    assert len(kept) < REASON_WIDTH and long_reason.startswith(kept) and long_reason[len(kept)] == " "
    assert not (tmp_path / "results").exists()  # --progress writes no report


def test_one_reason_of_every_job_stands_once_above_the_progress_table(tmp_path, capsys):
    warmup = "task.warmup_steps=1000 exceeds trainer.max_steps=6"
    for seed, attention in enumerate(("nystrom", "linformer", "performer")):
        job(tmp_path / "sweep", f"{seed}_listops-{attention}-s0", attention, 8, "failed", error=warmup)
    assert main(["--progress", "--runs", str(tmp_path / "sweep")]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[:3] == [
        f"All 3 jobs failed: {warmup}",
        "",
        "| task | attention | completed | running | interrupted | killed | failed |",
    ]
    assert lines[-1] == "| all |  | 0 | 0 | 0 | 0 | 3 |"  # nothing said twice below the table


def test_progress_of_a_folder_without_jobs_says_so(tmp_path):
    with pytest.raises(FileNotFoundError, match="no job folders"):
        main(["--progress", "--runs", str(tmp_path)])
