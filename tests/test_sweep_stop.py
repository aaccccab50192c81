"""A sweep that a SIGTERM to its process group stops, under the local launcher and under joblib: the jobs
running stop as ``interrupted`` with their state saved, no other job starts, the sweep's last lines name
the jobs that did not start and the command that continues it, and that command ends the interrupted
job as an uninterrupted run of its config and runs the others (``lra.job.sweep_stop``)."""

from __future__ import annotations

import json
import shlex
import signal
from pathlib import Path

import pytest
from test_resume import SIGNAL_STEP, assert_same_as, lra, short_run, signal_at

CONTINUE = "lra: interrupted: continue the sweep with: "


def statuses(sweep: Path) -> dict[str, str]:
    return {path.parent.name: json.loads(path.read_text())["status"] for path in sweep.glob("*/summary.json")}


def stopped_sweep(args: list[str], cwd: Path, sweep: Path, not_started: str) -> list[str]:
    """Run the sweep of ``args``, which a SIGTERM to its group stops: check how it ended and that it
    names ``not_started`` among the jobs that did not start; the arguments of the command it names to
    continue it."""
    stopped = lra(args, cwd)
    assert stopped.returncode == 128 + signal.SIGTERM, stopped.stderr[-3000:]
    (stop,) = [
        line for line in stopped.stderr.splitlines() if line.startswith("The sweep stopped on SIGTERM: ")
    ]
    assert "not started (" in stop and not_started in stop.partition("not started (")[2], stop
    assert "interrupted" in stopped.stdout.split(f"\nSweep {sweep}:\n")[-1]  # its table
    command = shlex.split(stopped.stderr.strip().splitlines()[-1].removeprefix(CONTINUE))
    assert command[:3] == ["python", "-m", "lra"] and command[-1] == "resume=auto"
    return command[3:]


@pytest.mark.slow  # two sweeps of python -m lra in subprocesses
def test_a_signalled_sweep_starts_no_job_and_its_command_continues_it(data_root, tmp_path, uninterrupted):
    sweep = tmp_path / "sweep"
    sent = signal_at(SIGNAL_STEP, "SIGTERM", tmp_path / "sent", group=True)
    args = ["-m", *short_run(data_root, "logger=csv", "seed=0,1", *sent), f"hydra.sweep.dir={sweep}"]
    command = stopped_sweep(args, tmp_path, sweep, "#1 seed=1")
    assert statuses(sweep) == {"0_listops-standard-s0": "interrupted"}  # job 1 never started

    continued = lra(command, tmp_path)
    assert continued.returncode == 0, continued.stderr[-3000:]
    assert statuses(sweep) == {"0_listops-standard-s0": "completed", "1_listops-standard-s1": "completed"}
    assert_same_as(sweep / "0_listops-standard-s0", uninterrupted)


@pytest.mark.slow  # two sweeps of python -m lra in subprocesses, their jobs in joblib worker processes
def test_a_signalled_joblib_sweep_stops_its_jobs_and_starts_no_other(data_root, tmp_path, uninterrupted):
    """Jobs 0 and 1 run at once and job 2 waits in the queue: the first to reach the step signals the
    group. Job 1 stops too (or, if its worker was still starting, never starts); job 2 never starts."""
    sweep = tmp_path / "sweep"
    sent = signal_at(SIGNAL_STEP, "SIGTERM", tmp_path / "sent", group=True)
    joblib = ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2", f"hydra.sweep.dir={sweep}"]
    args = ["-m", *short_run(data_root, "logger=csv", "seed=0,1,2", *sent), *joblib]
    command = stopped_sweep(args, tmp_path, sweep, "#2 seed=2")
    ran = statuses(sweep)
    assert ran["0_listops-standard-s0"] == "interrupted" and set(ran.values()) == {"interrupted"}
    assert not (sweep / "2_listops-standard-s2").exists()

    continued = lra(command, tmp_path)
    assert continued.returncode == 0, continued.stderr[-3000:]
    assert set(statuses(sweep).values()) == {"completed"} and len(statuses(sweep)) == 3
    assert_same_as(sweep / "0_listops-standard-s0", uninterrupted)
