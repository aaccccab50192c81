"""A job killed without a word (SIGKILL, the kernel's out-of-memory killer) is reported as killed, with
what the kernel log says, in ``--progress``, the report's list of jobs that did not complete and the
sweep's final table: here a real process that holds a run's lock, killed by SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from lra.report.cli import main
from lra.report.progress import ACTIVE_SECONDS, NO_SUMMARY, with_killed
from lra.report.tables import failed_section
from lra.results import killed_jobs
from lra.results.summary_tables import SweepSummary, without_retried

REPO = Path(__file__).resolve().parent.parent
# A stand-in for a job: it takes the run folder's lock as a job does, says so, then waits to be killed.
HOLD_THE_LOCK = (
    "import sys, time; from pathlib import Path; from lra.job.run_lock import RunLock; "
    "RunLock.acquire(Path(sys.argv[1])); print('locked', flush=True); time.sleep(120)"
)


def job_folder(sweep: Path, name: str, age_s: float = 0) -> Path:
    """A job folder with run.json and a metrics file, its files ``age_s`` seconds old."""
    folder = sweep / name
    (folder / "csv").mkdir(parents=True)
    config = {"task": {"name": "listops"}, "attention": {"name": "standard"}, "seed": 3}
    (folder / "run.json").write_text(json.dumps({"config": config, "options": {}}))
    (folder / "csv" / "metrics.csv").write_text("step\n")
    moment = time.time() - age_s
    for path in folder.rglob("*"):
        os.utime(path, (moment, moment))
    return folder


def holding(folder: Path) -> subprocess.Popen:
    """A process that holds ``folder``'s run lock until it is killed."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    process = subprocess.Popen(
        [sys.executable, "-c", HOLD_THE_LOCK, str(folder)], stdout=subprocess.PIPE, text=True, env=env
    )
    assert process.stdout.readline().strip() == "locked"
    return process


def kill(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGKILL)
    assert process.wait(timeout=30) == -signal.SIGKILL
    process.stdout.close()


def kernel_says(monkeypatch, lines: list[str] | None) -> None:
    """The kernel log reads as ``lines``; None: every source refuses, as in a container."""

    def read() -> list[str]:
        if lines is None:
            raise PermissionError(1, "Operation not permitted")
        return lines

    monkeypatch.setattr(killed_jobs, "KERNEL_LOGS", {"dmesg": read})
    killed_jobs.kernel_log.cache_clear()


@pytest.fixture(autouse=True)
def fresh_kernel_log():
    killed_jobs.kernel_log.cache_clear()
    yield
    killed_jobs.kernel_log.cache_clear()


def progress_lines(sweep: Path, capsys) -> list[str]:
    assert main(["--progress", "--runs", str(sweep)]) == 0
    return capsys.readouterr().out.strip().splitlines()


def test_a_job_killed_by_sigkill_is_killed_with_the_kernels_line(tmp_path, capsys, monkeypatch):
    folder = job_folder(tmp_path / "sweep", "0_listops-standard-s3", age_s=2 * ACTIVE_SECONDS)
    process = holding(folder)
    try:  # its holder runs: not killed, whatever the files' age
        assert killed_jobs.silent_end(folder) is None
        assert "killed" not in progress_lines(tmp_path / "sweep", capsys)[-1]
    finally:
        kill(process)
    oom = f"Out of memory: Killed process {process.pid} (python) total-vm:23000000kB, anon-rss:22000000kB"
    kernel_says(monkeypatch, ["Linux version 6.1", oom, "oom_reaper: reaped process 1"])
    lines = progress_lines(tmp_path / "sweep", capsys)
    assert lines[0] == "| task | attention | completed | running | interrupted | killed | failed |"
    assert lines[2] == "| listops | standard | 0 | 0 | 0 | 1 | 0 |"
    assert NO_SUMMARY not in "\n".join(lines)
    reason = lines[-1].removeprefix("- sweep/0_listops-standard-s3 (killed): ")
    assert reason.startswith(f"killed without a word (SIGKILL or a crash: pid {process.pid} left no")
    assert f"kernel log (dmesg): Out of memory: Killed process {process.pid} (python)" in reason


def test_the_reason_says_when_the_kernel_log_is_unreadable_or_silent(tmp_path, monkeypatch):
    folder = job_folder(tmp_path, "run")
    process = holding(folder)
    kill(process)
    holder = killed_jobs.silent_end(folder)
    assert holder is not None and holder.pid == process.pid
    kernel_says(monkeypatch, None)
    unreadable = killed_jobs.silent_end_reason(holder)
    assert "kernel log unreadable here" in unreadable and f"'Killed process {process.pid}'" in unreadable
    assert "Operation not permitted" in unreadable
    kernel_says(monkeypatch, [f"Out of memory: Killed process {process.pid + 1} (python)"])  # another pid
    assert "names no out-of-memory kill" in killed_jobs.silent_end_reason(holder)


def test_a_summary_written_after_the_lock_stands(tmp_path):
    folder = job_folder(tmp_path, "run")
    kill(holding(folder))
    assert killed_jobs.silent_end(folder) is not None
    summary = {"task": "listops", "attention": "standard", "status": "interrupted", "error": "SIGTERM"}
    (folder / "summary.json").write_text(json.dumps(summary))  # its handler ran: not silent
    assert killed_jobs.silent_end(folder) is None
    past = time.time() - 60  # a summary of an earlier segment, before the lock was taken again
    os.utime(folder / "summary.json", (past, past))
    assert killed_jobs.silent_end(folder) is not None


def test_the_reports_failures_and_the_sweeps_table_say_killed(tmp_path, capsys, monkeypatch):
    sweep = tmp_path / "sweep"
    folder = job_folder(sweep, "0_listops-standard-s3")
    done = job_folder(sweep, "1_listops-standard-s4")
    completed = {"task": "listops", "attention": "standard", "seed": 4, "status": "completed", "metrics": {}}
    (done / "summary.json").write_text(json.dumps(completed))
    process = holding(folder)
    kill(process)
    kernel_says(monkeypatch, None)

    listed = failed_section(with_killed([], [sweep]))
    assert "| listops | standard | 3 | killed | killed without a word" in listed
    assert f"`{folder.resolve()}`" in listed

    config = OmegaConf.create({"hydra": {"sweep": {"dir": str(sweep)}}})
    with pytest.raises(SystemExit) as ended:
        SweepSummary().on_multirun_end(config)
    assert ended.value.code == 1
    rows = capsys.readouterr().out.strip().splitlines()[-2:]
    assert rows[0].split()[:5] == ["listops", "standard", "-", "3", "killed"]
    assert "killed without a word" in rows[0]
    assert rows[1].split()[:5] == ["listops", "standard", "-", "4", "completed"]


def test_a_killed_trial_that_another_job_ran_to_completion_leaves_the_sweeps_table():
    killed = {"task": "listops", "status": "killed", "fingerprint": "abc"}
    retried = {"task": "listops", "status": "completed", "fingerprint": "abc"}
    other = {"task": "listops", "status": "killed", "fingerprint": "def"}
    unnamed = {"task": "listops", "status": "killed", "fingerprint": None}
    old = {"task": "listops", "status": "completed", "fingerprint": None}  # written before fingerprints
    assert without_retried([killed, retried, other, unnamed, old]) == [retried, other, unnamed, old]
