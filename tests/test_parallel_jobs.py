"""``hydra/launcher=joblib``: a sweep's jobs at once on one machine, each with a share of the cores."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CONF_DIR, TINY_COUNTS, tiny_data_overrides
from hydra import compose, initialize_config_dir
from hydra.core.hydra_config import HydraConfig

from lra.job import resolvers

REPO = Path(__file__).resolve().parent.parent


def threads_under(launcher_overrides: list[str], *overrides: str) -> int | None:
    """The resolved ``threads`` of a job composed with these launcher overrides, Hydra config set."""
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose("config", overrides=[*launcher_overrides, *overrides], return_hydra_config=True)
    HydraConfig.instance().set_config(cfg)
    try:
        return cfg.threads
    finally:
        HydraConfig.instance().cfg = None


def test_each_parallel_job_gets_its_share_of_the_cores(monkeypatch):
    monkeypatch.setattr(resolvers, "usable_cores", lambda: 8)
    joblib = ["hydra/launcher=joblib"]
    assert threads_under([*joblib, "hydra.launcher.n_jobs=2"]) == 4
    assert threads_under([*joblib, "hydra.launcher.n_jobs=3"]) == 2
    assert threads_under([*joblib, "hydra.launcher.n_jobs=16"]) == 1  # never 0
    assert threads_under([*joblib, "hydra.launcher.n_jobs=-1"]) == 1  # joblib's -1: one job per core
    assert threads_under([*joblib, "hydra.launcher.n_jobs=-7"]) == 4  # all cores but 6: 2 jobs
    assert threads_under([*joblib, "hydra.launcher.n_jobs=2"], "debug=fdr") == 4
    assert threads_under([*joblib, "hydra.launcher.n_jobs=2"], "threads=3") == 3  # the command line wins
    assert threads_under(["hydra/launcher=local"]) is None  # one job at a time: torch's default
    assert threads_under(["hydra/launcher=local"], "debug=fdr") == 1


@pytest.mark.slow  # a sweep of python -m lra in a subprocess, its jobs in joblib worker processes
def test_joblib_sweep_runs_two_jobs_at_once_with_divided_threads_past_a_failed_job(data_root, tmp_path):
    """Two attentions with a batch that fits the training split first, then with one that does not (those
    jobs fail at once); the jobs have loader workers, as the LRA tasks have."""
    sweep = tmp_path / "sweep"
    args = [
        "-m",
        f"task.batch_size=8,{TINY_COUNTS['train'] + 1}",
        "attention=standard,nystrom",
        "hydra/launcher=joblib",
        "hydra.launcher.n_jobs=2",
        "+callbacks.threads._target_=helpers.record_threads.RecordThreads",
        *tiny_data_overrides(data_root, "num_workers=2"),
        f"hydra.sweep.dir={sweep}",
    ]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "tests")])}
    command = [sys.executable, "-m", "lra", *args]
    result = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 1, result.stderr[-3000:]  # not every job completed
    assert "2 of 4 jobs did not complete" in result.stderr, result.stderr[-3000:]
    summaries = {path.parent: json.loads(path.read_text()) for path in sweep.glob("*/summary.json")}
    assert len(summaries) == 4
    expected = max(1, resolvers.usable_cores() // 2)
    pids = set()
    for job, summary in summaries.items():
        if summary["config"]["task"]["batch_size"] != 8:
            assert summary["status"] == "failed" and "larger than the training split" in summary["error"]
            continue
        assert summary["status"] == "completed", summary["error"]
        assert summary["config"]["threads"] == expected
        record = json.loads((job / "threads.json").read_text())
        assert record["threads"] == expected
        pids.add(record["pid"])
    assert len(pids) == 2  # each job in its own worker process
