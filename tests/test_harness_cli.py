"""``python -m lra`` as a user runs it: output folders, the final table, exit codes, sweeps, DDP."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import TINY_SEQ_LEN, tiny_data_overrides
from helpers.python_m_lra import python_m_lra

pytestmark = pytest.mark.slow  # each test starts python -m lra in a subprocess

REPO = Path(__file__).resolve().parent.parent


def lra_command(args: list[str], cwd: Path = REPO, timeout: int = 240) -> subprocess.CompletedProcess:
    return python_m_lra(args, cwd, timeout)


def tiny(data_root: Path, *extra: str) -> list[str]:
    """A fast dev run on the tiny data of conftest.py."""
    return tiny_data_overrides(data_root, *extra)


def test_single_run_writes_its_folder_and_prints_the_table(data_root, tmp_path):
    result = lra_command(["task=retrieval", "attention=nystrom", "seed=2", *tiny(data_root)], cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    (summary_file,) = tmp_path.glob("outputs/retrieval-nystrom-s2/*/summary.json")
    summary = json.loads(summary_file.read_text())
    assert summary["status"] == "completed"
    header = next(line for line in result.stdout.splitlines() if line.startswith("task "))
    assert header.split() == [
        "task",
        "attention",
        "SPT",
        "seed",
        "status",
        "best",
        "val",
        "acc",
        "test",
        "acc",
        "time",
        "peak",
        "memory",
    ]
    assert any(
        line.split()[:5] == ["retrieval", "nystrom", "-", "2", "completed"]
        for line in result.stdout.splitlines()
    )
    assert (summary_file.parent / ".hydra" / "config.yaml").is_file()


def test_bad_option_exits_with_one_clear_line(data_root, tmp_path):
    result = lra_command(
        ["attention=nystrom", "attention.num_landmarks=0", *tiny(data_root), f"hydra.run.dir={tmp_path}"]
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        "lra: failed: attention 'nystrom': num_landmarks must be an integer >= 1, got 0"
    )
    assert "Traceback" not in result.stderr
    assert not tmp_path.exists()  # refused before anything was written: the folder Hydra made is gone


def test_unknown_task_or_attention_lists_the_valid_names(tmp_path):
    for override, valid in (
        ("task=listopz", ("listops", "pathfinder", "retrieval")),
        ("attention=nystron", ("nystrom", "skyformer")),
    ):
        result = lra_command([override], cwd=tmp_path)
        assert result.returncode != 0
        assert all(name in result.stderr for name in valid), result.stderr
    assert not (tmp_path / "outputs").exists()


def test_help_names_the_app_its_first_commands_and_every_group(tmp_path):
    """``python -m lra --help`` (conf/hydra/help/lra.yaml): the app, the README's first three commands
    and each config group with its options, instead of Hydra's "__main__ is powered by Hydra"."""
    result = lra_command(["--help"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert lines[0].startswith("lra: the Long Range Arena benchmark harness")
    assert "powered by Hydra" not in result.stdout
    for command in (
        "python -m lra task=listops attention=nystrom",
        "python -m lra -m task=listops attention=nystrom,skyformer seed=0,1,2 "
        "attention.num_landmarks=32,64,128",
        "python -m lra.report",
    ):
        assert f"  {command}" in lines, result.stdout
    listed = dict(line.split(": ", 1) for line in lines if ": " in line and not line.startswith(" "))
    groups = (
        "task",
        "attention",
        "model",
        "pretrain",
        "trainer",
        "logger",
        "experiment",
        "debug",
        "hparams_search",
    )
    for group in groups:
        options = sorted(path.stem for path in (REPO / "conf" / group).glob("*.yaml"))
        assert listed[group].split(", ") == options, group
    assert not (tmp_path / "outputs").exists()


def test_multirun_names_the_jobs_it_refused_and_goes_on(data_root, tmp_path):
    sweep = tmp_path / "sweep"
    result = lra_command(
        [
            "-m",
            "attention=nystrom,skyformer",
            f"attention.num_landmarks=8,{TINY_SEQ_LEN + 1}",
            *tiny(data_root),
            f"hydra.sweep.dir={sweep}",
        ]
    )
    assert result.returncode == 1  # the sweep reports that not every job started
    statuses = {
        path.parent.name: json.loads(path.read_text())["status"] for path in sweep.glob("*/summary.json")
    }
    too_many = TINY_SEQ_LEN + 1
    assert statuses == {  # the folders name the option the sweep varies; the refused jobs leave none
        "0_listops-nystrom-num_landmarks=8-s0": "completed",
        "2_listops-skyformer-num_landmarks=8-s0": "completed",
    }
    refused = [line for line in result.stderr.splitlines() if "could not start" in line and line[0] == "#"]
    assert [line.split()[0] for line in refused] == ["#1", "#3"]
    assert all(f"num_landmarks={too_many}" in line for line in refused) and "Sweep" in result.stdout


@pytest.mark.usefixtures("one_ddp_run_at_a_time")
def test_ddp_with_two_cpu_processes(data_root, tmp_path):
    result = lra_command(
        [
            "trainer=ddp",
            "trainer.accelerator=cpu",
            "trainer.devices=2",
            "trainer.max_steps=2",
            "trainer.limit_val_batches=1",
            "trainer.limit_test_batches=1",
            "trainer.enable_progress_bar=false",
            *tiny_data_overrides(data_root),
            f"hydra.run.dir={tmp_path}",
        ],
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Starting with 2 processes" in result.stdout + result.stderr
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["metrics"]["train/steps"] == 2
    assert summary["config"]["trainer"]["strategy"] == "ddp"
