"""SLURM pre-emption through submitit, run with its local executor (``hydra/launcher=submitit_local``):
a job that receives submitit's pre-emption signal mid-training is requeued and continues from its
checkpoint to its full step count, in one folder with one continuous CSV history."""

from __future__ import annotations

import json

import pytest
from test_resume import MAX_STEPS, SIGNAL_STEP, assert_finished_as_one_run, lra, short_run, signal_at

from lra.job.preemption import lightning_plugins

pytest.importorskip("hydra_plugins.hydra_submitit_launcher", reason="needs the cluster extra")


@pytest.mark.slow  # a submitit sweep: python -m lra, then the job and its requeued run in subprocesses
def test_a_preempted_submitit_job_is_requeued_and_finishes_its_run(data_root, tmp_path):
    sweep = tmp_path / "sweep"
    args = short_run(data_root, "logger=csv", *signal_at(SIGNAL_STEP, "SIGUSR2", tmp_path / "sent"))
    result = lra(["-m", "hydra/launcher=submitit_local", f"hydra.sweep.dir={sweep}", *args], tmp_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert (tmp_path / "sent").exists()  # the signal landed at step SIGNAL_STEP
    (job,) = [path for path in sweep.iterdir() if path.is_dir() and not path.name.startswith(".")]
    summary = assert_finished_as_one_run(job)  # one folder: MAX_STEPS steps, each logged once
    assert summary["resumed_from"] == str(job / "checkpoints" / "last.ckpt")
    assert summary["metrics"]["train/steps"] == MAX_STEPS
    logs = "".join(path.read_text() for path in (sweep / ".submitit").rglob("*_log.*"))
    assert "this job is preempted" in logs and "Requeued job" in logs
    assert json.loads((job / "run.json").read_text())["name"] == "listops-standard-s0"


def test_lightning_does_not_requeue_by_itself_on_slurm(monkeypatch):
    monkeypatch.setenv("SLURM_NTASKS", "1")
    monkeypatch.setenv("SLURM_JOB_NAME", "lra")
    (environment,) = lightning_plugins()
    assert environment.auto_requeue is False
