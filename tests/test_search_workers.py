"""Workers of one study and their deaths: a job that dies runs again at most ``max_retries`` times; a
worker with no trial left to start waits for the trials other workers still run, re-queues those whose
heartbeats stopped and runs them, so the study ends with exactly ``n_trials`` completed or one line that
names the failed trials; two real workers on one journal file, with and without one SIGKILLed mid-trial."""

from __future__ import annotations

import functools
import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import tiny_data_overrides
from hydra.core.utils import JobReturn, JobStatus
from omegaconf import OmegaConf
from test_resume import REPO, signal_at

from lra.config.naming import STUDY_ENV

optuna = pytest.importorskip("optuna", reason="the `search` extra is not installed")
from optuna.distributions import FloatDistribution  # noqa: E402

import lra.search.sweeper  # noqa: E402
import lra.search.trials  # noqa: E402
from lra.search.storage import HEARTBEAT_ATTR, open_storage  # noqa: E402
from lra.search.sweeper import StudySweeper  # noqa: E402
from lra.search.trials import (  # noqa: E402
    ERROR_ATTR,
    RETRIES_ATTR,
    RETRY_OF_ATTR,
    counts_toward_total,
    trial_counts,
    was_interrupted,
)

LR = {"task.lr": FloatDistribution(1e-5, 1e-3, log=True)}
EVERY_S = 60  # the heartbeat interval of every worker here


class CompletingLauncher:
    """A launcher whose every trial completes at once, returning its learning rate."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.launched: list[str] = []

    def launch(self, overrides, initial_job_idx):
        self.launched += [job[0] for job in overrides]
        return [self.finished(job) for job in overrides]

    def finished(self, job) -> JobReturn:
        hydra_cfg = OmegaConf.create({"hydra": {"runtime": {"output_dir": str(self.out)}}})
        value = float(job[0].split("=")[1])
        return JobReturn(
            overrides=list(job), hydra_cfg=hydra_cfg, status=JobStatus.COMPLETED, _return_value=value
        )


class KillingLauncher(CompletingLauncher):
    """A launcher whose job dies (the launcher raises) whenever it runs the first parameters it was given."""

    def launch(self, overrides, initial_job_idx):
        first = self.launched[0] if self.launched else overrides[0][0]
        if overrides[0][0] == first:
            self.launched += [job[0] for job in overrides]
            raise RuntimeError("node lost")
        return super().launch(overrides, initial_job_idx)


def worker(tmp_path: Path, launcher: CompletingLauncher, n_trials: int, max_retries: int) -> StudySweeper:
    """A sweeper on the journal study ``s`` in ``tmp_path``, as ``hparams_search=lra`` builds it."""
    sweeper = StudySweeper(
        sampler=functools.partial(optuna.samplers.RandomSampler, seed=0),
        direction="maximize",
        storage=str(tmp_path / "s.journal"),
        study_name="s",
        n_trials=n_trials,
        n_jobs=1,
        params={},
        heartbeat_s=EVERY_S,
        max_retries=max_retries,
    )
    sweeper.launcher = launcher
    sweeper.config = OmegaConf.create(
        {
            "hydra": {"sweep": {"dir": str(tmp_path)}, "overrides": {"task": []}},
            "task": {"name": "listops"},
            "attention": {"name": "nystrom"},
        }
    )
    return sweeper


def test_a_trial_whose_job_dies_runs_again_at_most_max_retries_times(tmp_path, monkeypatch):
    monkeypatch.delenv(STUDY_ENV, raising=False)  # the sweeper sets it for its jobs
    sweeper = worker(tmp_path, KillingLauncher(tmp_path), n_trials=2, max_retries=2)
    study = sweeper.open_study()
    sweeper.run_trials(study, LR, {})
    trials = study.get_trials()
    assert [t.state.name for t in trials] == ["FAIL", "FAIL", "FAIL", "COMPLETE"]
    assert sweeper.launcher.launched.count(sweeper.launcher.launched[0]) == 3  # once and 2 retries
    assert [t.user_attrs.get(RETRY_OF_ATTR) for t in trials] == [None, 0, 0, None]
    assert was_interrupted(trials[0]) and was_interrupted(trials[1])
    assert trials[2].user_attrs[ERROR_ATTR] == "its job died: RuntimeError: node lost; no retry left"
    assert trial_counts(trials)["completed"] == 1 and sum(map(counts_toward_total, trials)) == 2


class Clock:
    """The search's clock, moved on by its own waits: a poll of the study never waits in real time."""

    def __init__(self) -> None:
        self.now = time.time()
        self.waits = 0

    def time(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.waits += 1


def dead_workers_trial(sweeper: StudySweeper, clock: Clock, retries: int) -> optuna.Study:
    """The study of ``sweeper`` with trial 0 running in a worker that just beat, then was SIGKILLed."""
    study = sweeper.open_study()
    trial = study.ask(LR)
    trial.set_user_attr(RETRIES_ATTR, retries)
    sweeper.storage_backend.set_trial_system_attr(
        trial._trial_id, HEARTBEAT_ATTR, {"time": clock.now, "every_s": EVERY_S}
    )
    return study


@pytest.fixture
def clock(monkeypatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(lra.search.trials, "time", SimpleNamespace(time=clock.time))
    monkeypatch.setattr(lra.search.sweeper, "time", SimpleNamespace(sleep=clock.sleep))
    monkeypatch.delenv(STUDY_ENV, raising=False)
    return clock


def sweeper_lines(caplog: pytest.LogCaptureFixture) -> str:
    return "\n".join(record.message for record in caplog.records if record.name == "lra.search.sweeper")


def survive(tmp_path: Path, clock: Clock, caplog: pytest.LogCaptureFixture, retries: int) -> list[str]:
    """Run a worker of 2 trials beside a dead worker's trial 0 with ``retries`` left, to its end; its log."""
    sweeper = worker(tmp_path, CompletingLauncher(tmp_path), n_trials=2, max_retries=retries)
    study = dead_workers_trial(sweeper, clock, retries=retries)
    with caplog.at_level(logging.INFO, logger="lra.search.sweeper"):
        sweeper.run_trials(study, LR, {})
        sweeper.report(study)
    return [record.message for record in caplog.records if record.name == "lra.search.sweeper"]


def test_a_worker_out_of_trials_waits_for_a_dead_workers_trial_and_runs_it_again(tmp_path, clock, caplog):
    """The survivor finishes its own trial while the dead one's heartbeats are still fresh."""
    lines = survive(tmp_path, clock, caplog, retries=2)
    trials = optuna.load_study(study_name="s", storage=open_storage(str(tmp_path / "s.journal"))).get_trials()
    assert [t.state.name for t in trials] == ["FAIL", "COMPLETE", "COMPLETE"]
    assert was_interrupted(trials[0]) and trials[2].params == trials[0].params
    assert trials[2].user_attrs[RETRY_OF_ATTR] == 0 and trial_counts(trials)["completed"] == 2
    assert clock.waits == 4  # three missed beats of 60 s: stale at the 4th poll, 240 s after its last beat
    assert any(line.startswith("Waiting for trial(s) 0 of other workers") for line in lines)
    assert not any("failed:" in line for line in lines)
    best = OmegaConf.load(tmp_path / "best.yaml")
    assert best.value == max(t.value for t in trials[1:]) and best.study == "s"


def test_a_dead_workers_trial_with_no_retry_left_is_named_in_the_searchs_last_line(tmp_path, clock, caplog):
    (line,) = [line for line in survive(tmp_path, clock, caplog, retries=0) if "failed:" in line]
    assert line == (
        "Study s: 1 of 2 trials completed; failed: trial 0: its heartbeats stopped: the process that ran it "
        "died; no retry left"
    )


def two_workers(command: list[str], cwd: Path) -> tuple[list[int], list[optuna.trial.FrozenTrial]]:
    """Run ``python -m lra COMMAND`` twice at once in ``cwd``, sharing the journal file of ``command``;
    (their exit statuses, sorted; the trials of the study in that file)."""
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "tests")]),
        "WANDB_SILENT": "true",
    }
    workers = [
        subprocess.Popen(
            [sys.executable, "-m", "lra", *command],
            cwd=cwd,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    errors = [worker.communicate(timeout=600)[1] for worker in workers]
    codes = sorted(worker.returncode for worker in workers)
    assert all(code in (0, -signal.SIGKILL) for code in codes), errors[0][-2000:] + errors[1][-2000:]
    (journal,) = [word.split("=", 1)[1] for word in command if word.startswith("hydra.sweeper.storage=")]
    storage = open_storage(journal)
    (name,) = optuna.get_all_study_names(storage)
    assert (cwd / "multirun" / "search" / name / "best.yaml").is_file()
    return codes, optuna.load_study(study_name=name, storage=storage).get_trials()


def search_command(data_root: Path, journal: Path, *extra: str) -> list[str]:
    journal.parent.mkdir()
    return [
        *("-m", "hparams_search=lra", "task=listops", "attention=nystrom"),
        "attention.num_landmarks=choice(4,8)",  # the tiny sequences have 32 tokens
        *tiny_data_overrides(data_root),
        f"hydra.sweeper.storage={journal}",
        *extra,
    ]


@pytest.mark.slow  # two searches of python -m lra at once, in subprocesses
def test_two_workers_on_one_journal_file_end_with_exactly_n_trials(data_root, tmp_path):
    # heartbeat_s=5: the worker that runs out of trials polls for its partner's every 5 s, not 60.
    journal = tmp_path / "shared" / "study.journal"
    command = search_command(data_root, journal, "hydra.sweeper.n_trials=4", "hydra.sweeper.heartbeat_s=5")
    codes, trials = two_workers(command, tmp_path)
    assert codes == [0, 0]
    completed = [trial for trial in trials if trial.state.name == "COMPLETE"]
    assert len(completed) == 4  # exactly n_trials, whichever worker ran them
    # Each trial draws with seed + its number: no parameter set ran twice.
    assert len({json.dumps(trial.params, sort_keys=True) for trial in completed}) == 4
    assert all(trial.state.name == "COMPLETE" or "skipped" in trial.user_attrs for trial in trials)


@pytest.mark.slow  # two searches of python -m lra in subprocesses, one waiting out a dead trial's heartbeats
def test_two_workers_with_one_sigkilled_mid_trial_end_with_exactly_n_trials(data_root, tmp_path):
    killed = tmp_path / "killed"  # whichever worker first reaches step 1 creates it and is SIGKILLed
    command = search_command(
        data_root,
        tmp_path / "shared" / "study.journal",
        *signal_at(1, "SIGKILL", killed),
        *("hydra.sweeper.n_trials=2", "hydra.sweeper.heartbeat_s=2"),
    )
    codes, trials = two_workers(command, tmp_path)
    assert codes == [-signal.SIGKILL, 0]
    counts = trial_counts(trials)
    # Exactly n_trials completed: the killed worker's trial was queued again and run by the survivor.
    assert [counts[state] for state in ("completed", "interrupted", "failed", "running")] == [2, 1, 0, 0]
    (lost,) = [t for t in trials if was_interrupted(t)]
    (again,) = [t for t in trials if t.user_attrs.get(RETRY_OF_ATTR) == lost.number]
    assert again.state.name == "COMPLETE" and again.params == lost.params
