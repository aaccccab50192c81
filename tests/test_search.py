"""Hyperparameter search (``hparams_search=lra``): study names, the objective, ``+best=PATH``, and
searches on the tiny data that complete, resume to ``n_trials`` in total, go on past a failed trial,
and share one journal file between two workers (test_search_workers.py)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from conftest import CONF_DIR, tiny_data_overrides
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf
from test_resume import lra, signal_at

from lra.config.errors import ConfigError
from lra.config.naming import STUDY_ENV, SWEPT_KEYS_ENV, parse, run_group
from lra.report.cli import main as report_main
from lra.results.summary_json import read_summaries
from lra.search.best import apply_best, objective
from lra.search.study import study_name, trained_params

optuna = pytest.importorskip("optuna", reason="the `search` extra is not installed")
from lra.search.trials import ERROR_ATTR  # noqa: E402

SEARCH = "hparams_search=lra"
SMALL_LANDMARKS = "attention.num_landmarks=choice(4,8)"  # the tiny sequences have 32 tokens


def test_the_study_name_keeps_the_fixed_options_that_change_what_a_trial_computes(monkeypatch):
    monkeypatch.setenv(SWEPT_KEYS_ENV, "task.lr attention.num_landmarks")
    command = [SEARCH, "task=listops", "attention=nystrom", "trainer.max_steps=2000", "data_root=/x"]
    assert study_name("listops", "nystrom", 0, [*command, "num_workers=4", "task.lr=0.01"]) == (
        "listops-nystrom-max_steps=2000-s0"
    )
    sampled = ["attention.num_landmarks=choice(32,64)", "attention.num_landmarks=64"]
    assert study_name("listops", "nystrom", 0, [*command, *sampled]) == "listops-nystrom-max_steps=2000-s0"


def test_a_search_of_another_seed_preset_task_or_attention_is_another_study():
    names = set()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        for overrides in (
            [],
            ["seed=1"],
            ["experiment=demo"],  # the preset's own task and attention: listops, nystrom
            ["task=text"],
            ["attention=linformer"],
        ):
            cfg = compose(config_name="config", overrides=[SEARCH, *overrides], return_hydra_config=True)
            names.add(OmegaConf.select(cfg, "hydra.sweep.dir"))
    assert names == {
        "multirun/search/listops-nystrom-s0",
        "multirun/search/listops-nystrom-s1",
        "multirun/search/listops-nystrom-experiment=demo-s0",
        "multirun/search/text-nystrom-s0",
        "multirun/search/listops-linformer-s0",
    }


def test_a_trial_is_grouped_in_wandb_by_its_study(monkeypatch):
    monkeypatch.delenv(STUDY_ENV, raising=False)
    assert run_group("listops") == "listops"
    monkeypatch.setenv(STUDY_ENV, "listops-nystrom-max_steps=2000-s0")  # set by the search for its trials
    assert run_group("listops") == "listops-nystrom-max_steps=2000-s0"


def test_the_objective_is_the_best_validation_accuracy_or_nan():
    assert objective({"status": "completed", "metrics": {"val/acc_best": 0.4}}) == 0.4
    for failed in ({"status": "failed", "metrics": {"val/acc_best": None}}, {"status": "nan", "metrics": {}}):
        assert objective(failed) != objective(failed)  # NaN: Optuna records a failed trial


def test_best_yaml_sets_its_parameters_and_refuses_another_task(tmp_path):
    best = tmp_path / "best.yaml"
    params = {"task.lr": 3.0e-4, "attention.num_landmarks": 16}
    OmegaConf.save(OmegaConf.create({"task": "listops", "attention": "nystrom", "params": params}), best)
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = apply_best(compose(config_name="config", overrides=["task=listops", f"+best={best}"]))
        assert (cfg.task.lr, cfg.attention.num_landmarks) == (3.0e-4, 16)
        other = compose(config_name="config", overrides=["task=text", f"+best={best}"])
        with pytest.raises(ConfigError, match=r"tuned task=listops, but this run has task=text"):
            apply_best(other)


def search_folder(cwd: Path) -> Path:
    (folder,) = (cwd / "multirun" / "search").iterdir()  # named after its study
    return folder


def load_study(cwd: Path) -> optuna.Study:
    folder = search_folder(cwd)
    return optuna.load_study(study_name=folder.name, storage=f"sqlite:///{folder / 'optuna.db'}")


def states(study: optuna.Study) -> list[str]:
    return [trial.state.name for trial in study.get_trials()]


@pytest.mark.slow  # three searches of python -m lra in subprocesses
def test_a_search_reaches_n_trials_in_total_across_restarts_and_an_interruption(data_root, tmp_path):
    command = [
        "-m",
        SEARCH,
        "task=listops",
        "attention=nystrom",
        SMALL_LANDMARKS,
        *tiny_data_overrides(data_root),
    ]
    sent = tmp_path / "sent"  # the callback signals only while this file is absent
    command += signal_at(1, "SIGTERM", sent)  # in every phase: callbacks are part of the study's name
    sent.touch()
    first = lra([*command, "hydra.sweeper.n_trials=2"], tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    assert states(load_study(tmp_path)) == ["COMPLETE", "COMPLETE"]

    sent.unlink()
    again = [*command, "hydra.sweeper.n_trials=4"]
    interrupted = lra(again, tmp_path)  # SIGTERM in the first trial it starts
    assert interrupted.returncode != 0
    assert states(load_study(tmp_path)) == ["COMPLETE", "COMPLETE", "FAIL", "WAITING"]

    resumed = lra(again, tmp_path)  # the same command: the interrupted trial, then one more
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    study = load_study(tmp_path)
    trials = study.get_trials()
    assert states(study) == ["COMPLETE", "COMPLETE", "FAIL", "COMPLETE", "COMPLETE"]
    completed = [trial.params for trial in trials if trial.state.name == "COMPLETE"]
    assert len({json.dumps(params, sort_keys=True) for params in completed}) == 4  # none repeated
    assert trials[3].params == trials[2].params and ERROR_ATTR not in trials[2].user_attrs
    rerun = json.loads((Path(trials[3].user_attrs["run_dir"]) / "summary.json").read_text())
    assert rerun["resumed_from"] is not None  # it continued the interrupted run from its checkpoint

    sweep = search_folder(tmp_path)
    best = OmegaConf.load(sweep / "best.yaml")
    assert best.value == study.best_value and best.params == trained_params(study.best_params)
    (best_override,) = parse([word for word in shlex.split(best.command) if word.startswith("+best=")])
    assert best_override.value() == f"multirun/search/{sweep.name}/best.yaml"  # parses, '=' and all
    folders = sorted(path for path in sweep.iterdir() if path.is_dir())
    assert [path.name.split("_", 1)[0] for path in folders] == ["0", "1", "2", "3", "4"]
    assert all("-lr=" in path.name and "-num_landmarks=" in path.name for path in folders)
    assert json.loads((folders[3] / "resumed.json").read_text())["continues"] == str(folders[2].resolve())
    assert len(read_summaries(sweep)) == 4  # the sweep table lists the continued run once
    assert report_main(["--runs", str(sweep), "--out", str(tmp_path / "report")]) == 0
    report = (tmp_path / "report" / "lra_table.md").read_text()
    assert "## Hyperparameter searches" in report and f"### Study `{study.study_name}`" in report


@pytest.mark.slow  # a search of python -m lra in a subprocess
def test_a_failed_trial_is_recorded_with_its_reason_and_the_search_goes_on(data_root, tmp_path):
    kernel = "attention.conv_kernel_size=choice(3,4)"  # the skip connection's kernel must be odd
    command = ["-m", SEARCH, "task=listops", "attention=nystrom", kernel, *tiny_data_overrides(data_root)]
    search = lra([*command, "hydra.sweeper.n_trials=3"], tmp_path)
    trials = load_study(tmp_path).get_trials()
    assert [t.state.name for t in trials].count("COMPLETE") >= 1, search.stderr[-3000:]
    failed = [t for t in trials if t.state.name == "FAIL"]
    assert failed and all(t.params["attention.conv_kernel_size"] == 4 for t in failed)
    assert all("conv_kernel_size must be an odd integer" in t.user_attrs[ERROR_ATTR] for t in failed)
    assert len(trials) == 3 and (search_folder(tmp_path) / "best.yaml").is_file()


@pytest.mark.slow  # python -m lra in subprocesses
def test_a_bad_search_stops_with_one_line_before_any_trial(data_root, tmp_path):
    command = ["-m", SEARCH, "task=listops", *tiny_data_overrides(data_root)]
    for bad, message in (
        ("hydra.sweeper.storage=sqlite:////no/such/folder/optuna.db", "cannot open the study storage"),
        ("attention.num_landmark=choice(4,8)", "samples attention.num_landmark, not a key of the config"),
        ("attention=nystrom,skyformer", "one search per value"),
        ("hydra.sweeper.storage=study.db", "is neither a SQLAlchemy URL"),
        ("hydra.sweeper.max_retries=-1", "hydra.sweeper.max_retries=-1 is invalid: it must be >= 0"),
        ("attention.num_landmarks=tag(log,choice(4,8))", "a search reads one tag, log, on an interval"),
    ):
        refused = lra([*command, bad], tmp_path)
        assert refused.returncode == 1 and message in refused.stderr.splitlines()[-1], refused.stderr[-2000:]
    assert not (tmp_path / "multirun").exists() or not any((tmp_path / "multirun").rglob("summary.json"))
    single = lra(command[1:], tmp_path)  # without -m
    assert single.returncode == 1 and "add -m" in single.stderr.splitlines()[-1]
