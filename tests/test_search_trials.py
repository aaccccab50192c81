"""A study's trials as the search counts them: storages (journal files among them), heartbeats, retries
of a trial whose heartbeats stopped, trials asked past ``n_trials``, the per-trial seed, and the report's
section on a journal study."""

from __future__ import annotations

import functools
import sys
import time
from pathlib import Path

import pytest

from lra.config.errors import ConfigError
from lra.report.studies import studies_section

optuna = pytest.importorskip("optuna", reason="the `search` extra is not installed")
from optuna.distributions import FloatDistribution  # noqa: E402

from lra.search.sampler import TrialSeeded  # noqa: E402
from lra.search.storage import HEARTBEAT_ATTR, heartbeats, is_stale, open_storage  # noqa: E402
from lra.search.trials import (  # noqa: E402
    ERROR_ATTR,
    RETRIES_ATTR,
    RETRY_OF_ATTR,
    counts_toward_total,
    fail_stale_trials,
    skip,
    trial_counts,
    was_interrupted,
    within_total,
)

LR = {"task.lr": FloatDistribution(1e-5, 1e-3, log=True)}


def journal_study(tmp_path: Path, name: str = "s") -> tuple[optuna.Study, optuna.storages.BaseStorage]:
    storage = open_storage(str(tmp_path / f"{name}.journal"))
    return optuna.create_study(study_name=name, storage=storage, direction="maximize"), storage


def test_a_storage_is_a_url_or_a_journal_file_and_anything_else_is_one_line(tmp_path):
    assert isinstance(open_storage(str(tmp_path / "a.journal")), optuna.storages.JournalStorage)
    assert isinstance(open_storage(f"sqlite:///{tmp_path}/a.db"), optuna.storages.RDBStorage)
    for storage, message in (
        (f"sqlite:///{tmp_path}/no/such/folder/optuna.db", "unable to open database file"),
        (f"{tmp_path}/no/such/folder/a.journal", "No such file or directory"),
        (
            f"{tmp_path}/a.db",
            "neither a SQLAlchemy URL (sqlite:///PATH, postgresql+psycopg://...) nor a journal",
        ),
    ):
        with pytest.raises(ConfigError) as refused:
            open_storage(storage)
        assert message in str(refused.value) and "\n" not in str(refused.value)


def test_a_postgres_storage_without_its_driver_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "psycopg", None)  # as if the `postgres` extra were not installed
    with pytest.raises(ConfigError) as refused:
        open_storage("postgresql+psycopg://user:password@localhost/lra")
    assert 'pip install -e ".[postgres]"' in str(refused.value) and "\n" not in str(refused.value)


def test_heartbeats_are_recorded_while_a_trial_runs(tmp_path):
    study, storage = journal_study(tmp_path)
    trial = study.ask(LR)
    start = time.time()
    with heartbeats(storage, [trial._trial_id], every_s=0.05):
        time.sleep(0.2)
    frozen = storage.get_trial(trial._trial_id)
    beat = frozen.system_attrs[HEARTBEAT_ATTR]
    assert beat["every_s"] == 0.05 and beat["time"] >= start
    assert not is_stale(frozen, beat["time"] + 0.1, 60) and is_stale(frozen, beat["time"] + 0.2, 60)


def test_a_trial_that_never_beat_is_stale_three_of_the_judges_intervals_after_its_start(tmp_path):
    """Its worker died between asking for it and its first heartbeat."""
    study, storage = journal_study(tmp_path)
    trial = storage.get_trial(study.ask(LR)._trial_id)
    started = trial.datetime_start.timestamp()
    assert not is_stale(trial, started + 2.9, every_s=1) and is_stale(trial, started + 3.1, every_s=1)


def beat_long_ago(storage: optuna.storages.BaseStorage, trial: optuna.trial.Trial) -> None:
    """A heartbeat 4 s old at 1 s intervals: three beats missed, the trial's process died."""
    storage.set_trial_system_attr(trial._trial_id, HEARTBEAT_ATTR, {"time": time.time() - 4, "every_s": 1})


def test_a_trial_whose_heartbeats_stopped_runs_again_until_its_retries_are_spent(tmp_path):
    study, storage = journal_study(tmp_path)
    lost = study.ask(LR)
    lost.set_user_attr(RETRIES_ATTR, 1)
    beat_long_ago(storage, lost)
    fail_stale_trials(study, storage, 60)
    first, queued = study.get_trials()
    assert (first.state.name, queued.state.name) == ("FAIL", "WAITING") and was_interrupted(first)
    assert queued.user_attrs == {RETRIES_ATTR: 0, RETRY_OF_ATTR: 0}
    again = study.ask(LR)  # any worker's next trial: the same parameters
    assert again.params == lost.params and again.user_attrs[RETRIES_ATTR] == 0
    beat_long_ago(storage, again)
    fail_stale_trials(study, storage, 60)
    trials = study.get_trials()
    assert [t.state.name for t in trials] == ["FAIL", "FAIL"]  # no retry left: nothing queued
    assert trials[1].user_attrs[ERROR_ATTR] == (
        "its heartbeats stopped: the process that ran it died; no retry left"
    )
    assert counts_toward_total(trials[1]) and trial_counts(trials) == {
        "completed": 0,
        "failed": 1,
        "interrupted": 1,
        "running": 0,
        "skipped": 0,
    }


def test_a_trial_asked_past_n_trials_is_skipped_and_not_counted(tmp_path):
    study, storage = journal_study(tmp_path)
    first, second, third = (study.ask(LR) for _ in range(3))  # three workers ask at the same moment
    frozen = [storage.get_trial(trial._trial_id) for trial in (first, second, third)]
    assert within_total(study, frozen[1], 2) and not within_total(study, frozen[2], 2)
    skip(study, storage, frozen[2])
    trials = study.get_trials()
    assert sum(map(counts_toward_total, trials)) == 2 and trial_counts(trials)["skipped"] == 1


def test_each_trial_draws_with_seed_plus_its_number(tmp_path):
    """The same trial number draws the same values in any study; two numbers draw differently."""
    sampler = functools.partial(optuna.samplers.TPESampler, seed=7)
    draws = []
    for name in ("a", "b"):
        study = optuna.create_study(study_name=name, sampler=TrialSeeded(sampler, 7), direction="maximize")
        draws.append([study.ask(LR).params["task.lr"] for _ in range(3)])
    assert draws[0] == draws[1] and len(set(draws[0])) == 3


def test_the_report_reads_a_journal_study_and_says_in_one_line_what_it_cannot_read(tmp_path, capsys):
    runs = tmp_path / "multirun"
    runs.mkdir()
    study, _ = journal_study(runs, "listops-nystrom")
    for value in (0.2, 0.4, 0.3):
        trial = study.ask({**LR, "model.dropout": FloatDistribution(0.0, 0.3)})
        study.tell(trial, value)
    section = studies_section(runs, tmp_path / "out", ["sqlite:////no/such/folder/optuna.db"])
    assert (
        "### Study `listops-nystrom`" in section
        and "3 completed" in section
        and "Best val/acc_best: 40.00%" in section
    )
    assert (tmp_path / "out" / "listops-nystrom-importance.png").is_file()
    (skipped,) = capsys.readouterr().err.splitlines()
    assert skipped.startswith("skipped: cannot open the study storage sqlite:////no/such/folder/optuna.db")


def test_the_report_without_the_search_extra_skips_its_study_section_in_one_line(
    tmp_path, capsys, monkeypatch
):
    journal_study(tmp_path)
    monkeypatch.setitem(sys.modules, "optuna", None)
    assert studies_section(tmp_path, tmp_path / "out") == ""
    (line,) = capsys.readouterr().err.splitlines()
    assert 'needs the `search` extra (optuna is not installed): pip install -e ".[search]"' in line
