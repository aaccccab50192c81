"""Reliability of long runs: resume after SIGTERM or SIGKILL (``resume=auto`` or PATH), reproducible seeds.

The interruptions are real signals, sent at a chosen step through the ``callbacks`` config key
(``tests/helpers/signal_at_step.py``), so that they land mid-training at a known step: by the run to
itself, or to its whole process group from another process, as a scheduler sends them. The runs in
subprocesses have loader workers, as every LRA task has, and each leads its own process group.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from conftest import compose_config, smoke_overrides, tiny_data_overrides
from helpers.records import run_of
from omegaconf import OmegaConf

from lra.config.errors import ConfigError
from lra.job.job_end import SIGTERM_EXIT_STATUS
from lra.job.resolve import comparable_config
from lra.job.resume import (
    POINTER_FILE,
    RUN_FILE,
    find_unfinished_run,
    plan_run,
)
from lra.job.resume import run_folders as runs_under
from lra.job.train import run

REPO = Path(__file__).resolve().parent.parent
MAX_STEPS, EVAL_EVERY, SIGNAL_STEP = 12, 4, 6
WORKERS = 2  # loader workers per process, as conf/config.yaml gives every LRA task


def signal_at(step: int, name: str, marker: Path, group: bool = False, during: str = "training") -> list[str]:
    """Overrides that send this run the signal ``name`` after training step ``step`` (once); ``group``:
    to its whole process group, from another process; ``during``: ``validation`` sends it during the
    evaluation after that step."""
    return [
        "+callbacks.signal._target_=helpers.signal_at_step.SignalAtStep",
        f"+callbacks.signal.step={step}",
        f"+callbacks.signal.signal={name}",
        f"+callbacks.signal.once={marker}",
        *([f"+callbacks.signal.group={group}"] if group else []),
        *([f"+callbacks.signal.during={during}"] if during != "training" else []),
    ]


def short_run(data_root: Path, *extra: str) -> list[str]:
    """12 ListOps steps on the tiny data (a longer fast dev run) with loader workers, evaluated every 4
    steps, W&B and CSV."""
    return [
        "attention=standard",
        *tiny_data_overrides(
            data_root, "logger=wandb", f"trainer.max_steps={MAX_STEPS}", f"num_workers={WORKERS}"
        ),
        f"task.eval_every={EVAL_EVERY}",
        *extra,
    ]


def lra(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "tests")]),
        "WANDB_SILENT": "true",
        "HYDRA_FULL_ERROR": "0",
    }
    env.pop("WANDB_MODE", None)
    return subprocess.run(  # its own process group, as a scheduler's job: a signal to it stays there
        [sys.executable, "-m", "lra", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        start_new_session=True,
    )


def csv_rows(run_dir: Path, column: str) -> list[tuple[int, float]]:
    """(step, value) of every row of csv/metrics.csv with ``column`` set, in file order."""
    with open(run_dir / "csv" / "metrics.csv") as handle:
        return [(int(row["step"]), float(row[column])) for row in csv.DictReader(handle) if row[column]]


def checkpoint(path: Path) -> dict:
    return torch.load(path, map_location="cpu", weights_only=True)


def run_folders(cwd: Path) -> list[Path]:
    return sorted(cwd.glob("outputs/listops-standard-s0/*"))


def assert_same_as(run_dir: Path, reference: Path, stage_metrics: tuple[str, ...] = ()) -> None:
    """``run_dir`` ended as ``reference`` did, to the last bit: its final weights, every logged loss
    and accuracy (and ``stage_metrics``), and its summary's tested figures."""
    final = [
        checkpoint(folder / "checkpoints" / "last.ckpt")["state_dict"] for folder in (run_dir, reference)
    ]
    assert final[0].keys() == final[1].keys()
    assert all(torch.equal(final[0][key], final[1][key]) for key in final[0]), "final weights differ"
    for column in ("train/loss", "val/acc", "val/loss", *stage_metrics):
        assert csv_rows(run_dir, column) == csv_rows(reference, column), column
    summaries = [
        json.loads((folder / "summary.json").read_text())["metrics"] for folder in (run_dir, reference)
    ]
    for key in ("val/acc_best", "test/acc", "test/loss"):
        assert summaries[0][key] == summaries[1][key], key


def assert_finished_as_one_run(run_dir: Path) -> dict:
    """The run ended at MAX_STEPS with one row per step in its CSV (continued, not restarted)."""
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "completed", summary["error"]
    assert summary["metrics"]["train/steps"] == MAX_STEPS
    assert [step for step, _ in csv_rows(run_dir, "train/loss")] == list(range(MAX_STEPS))
    assert [step for step, _ in csv_rows(run_dir, "val/acc")] == [3, 7, 11]
    state = checkpoint(run_dir / "checkpoints" / "last.ckpt")
    assert state["global_step"] == MAX_STEPS
    assert state["lr_schedulers"][0]["last_epoch"] == MAX_STEPS  # the schedule went on from the checkpoint
    return summary


@pytest.mark.slow  # python -m lra in subprocesses, signalled mid-run
def test_sigterm_to_the_group_saves_the_state_and_resume_auto_continues_the_same_run(
    data_root, tmp_path, uninterrupted
):
    """SIGTERM to the whole process group, loader workers included, as a scheduler sends it: the run
    stops at the step with its state saved, and the resumed run ends as an uninterrupted one."""
    args = short_run(
        data_root, "logger=wandb", *signal_at(SIGNAL_STEP, "SIGTERM", tmp_path / "sent", group=True)
    )
    stopped = lra(args, tmp_path)
    assert stopped.returncode == SIGTERM_EXIT_STATUS, stopped.stderr[-3000:]
    (run_dir,) = run_folders(tmp_path)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "interrupted" and f"SIGTERM at step {SIGNAL_STEP}" in summary["error"]
    assert stopped.stderr.strip().splitlines()[-1].startswith("lra: interrupted: SIGTERM at step 6")
    state = checkpoint(run_dir / "checkpoints" / "last.ckpt")
    assert state["global_step"] == SIGNAL_STEP and state["optimizer_states"][0]["state"]
    assert float(state["state_dict"]["val_acc_best.max_value"]) == csv_rows(run_dir, "val/acc_best")[-1][1]
    assert [step for step, _ in csv_rows(run_dir, "train/loss")] == list(range(SIGNAL_STEP))
    run_id = json.loads((run_dir / RUN_FILE).read_text())["wandb_run_id"]

    resumed = lra([*args, "resume=auto"], tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    first, pointer = run_folders(tmp_path)
    assert first == run_dir and not (pointer / "summary.json").exists()
    assert json.loads((pointer / POINTER_FILE).read_text())["continues"] == str(run_dir)
    summary = assert_finished_as_one_run(run_dir)
    assert summary["resumed_from"] == str(run_dir / "checkpoints" / "last.ckpt")
    assert summary["metrics"]["val/acc_best"] == max(value for _, value in csv_rows(run_dir, "val/acc"))
    wandb_runs = sorted(path.name for path in (run_dir / "wandb").glob("offline-run-*"))
    assert len(wandb_runs) == 2 and all(name.endswith(f"-{run_id}") for name in wandb_runs)
    assert_same_as(run_dir, uninterrupted)


@pytest.mark.slow  # python -m lra in subprocesses, signalled mid-run
def test_sigkill_resumes_from_the_last_evaluation_and_ends_as_an_uninterrupted_run(
    data_root, tmp_path, uninterrupted
):
    args = short_run(
        data_root, "logger=csv", *signal_at(SIGNAL_STEP, "SIGKILL", tmp_path / "sent", group=True)
    )
    killed = lra(args, tmp_path)
    assert killed.returncode == -signal.SIGKILL
    (run_dir,) = run_folders(tmp_path)
    assert not (run_dir / "summary.json").exists()  # nothing could be written
    assert checkpoint(run_dir / "checkpoints" / "last.ckpt")["global_step"] == EVAL_EVERY
    # Rows past the checkpoint reached the file: the resumed run drops them and logs those steps again.
    assert [step for step, _ in csv_rows(run_dir, "train/loss")] == list(range(SIGNAL_STEP - 1))

    resumed = lra([*args, "resume=auto"], tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert run_folders(tmp_path)[0] == run_dir
    assert_finished_as_one_run(run_dir)
    assert_same_as(run_dir, uninterrupted)


def in_process(data_root: Path, *extra: str, attention: str = "standard", max_steps: int = MAX_STEPS):
    """The config of ``short_run`` for ``lra.job.train.run`` in this process (CSV logger only)."""
    steps = [f"trainer.max_steps={max_steps}", f"task.eval_every={EVAL_EVERY}"]
    return compose_config(smoke_overrides(data_root, "listops", attention, *steps, *extra))


def test_resume_from_a_path(data_root, tmp_path):
    """SIGTERM in this process, then ``resume=<run folder>`` and ``resume=<.ckpt>`` from other job folders."""
    first, second = tmp_path / "first", tmp_path / "second"
    signals = {
        folder: signal_at(SIGNAL_STEP, "SIGTERM", folder.with_suffix(".sent")) for folder in (first, second)
    }
    for folder in (first, second):  # ``second`` is resumed from its .ckpt file below
        with pytest.raises(SystemExit) as stopped:
            run(in_process(data_root, *signals[folder]), folder)
        assert stopped.value.code == SIGTERM_EXIT_STATUS
        assert json.loads((folder / "summary.json").read_text())["status"] == "interrupted"

    for run_dir, resume in ((first, first), (second, second / "checkpoints" / "last.ckpt")):
        job_dir = tmp_path / f"job-{run_dir.name}"
        summary = run(in_process(data_root, f"resume={resume}", *signals[run_dir]), job_dir)
        assert summary["output_dir"] == str(run_dir) and summary["status"] == "completed", summary["error"]
        assert_finished_as_one_run(run_dir)
        assert json.loads((job_dir / POINTER_FILE).read_text())["continues"] == str(run_dir)


@pytest.mark.parametrize(
    ("resume", "extra", "message"),
    [
        ("first", ["task.lr=0.5"], "has another config (task.lr differ)"),
        ("nowhere", [], "is neither a run folder nor a .ckpt file"),
        ("empty", [], "no checkpoints/last.ckpt in that folder"),
    ],
)
def test_resume_path_errors_are_one_line_before_training(data_root, tmp_path, resume, extra, message):
    folder = tmp_path / resume
    if resume == "first":
        fake_run(tmp_path, resume, comparable_config(in_process(data_root)), "interrupted", True, 100)
    elif resume == "empty":
        folder.mkdir()
    summary = run(in_process(data_root, f"resume={folder}", *extra), tmp_path / "job")
    assert summary["status"] == "failed" and message in summary["error"] and "\n" not in summary["error"]
    assert summary["metrics"]["train/steps"] is None


def fake_run(root: Path, name: str, config: dict, status: str | None, checkpoint: bool, mtime: int) -> Path:
    directory = root / name
    (directory / "checkpoints").mkdir(parents=True)
    (directory / RUN_FILE).write_text(json.dumps({"config": config, "wandb_run_id": name}))
    if status is not None:
        (directory / "summary.json").write_text(json.dumps({"status": status}))
    if checkpoint:
        path = directory / "checkpoints" / "last.ckpt"
        path.write_bytes(b"")
        os.utime(path, (mtime, mtime))
    return directory


def test_resume_auto_picks_the_newest_unfinished_run_of_the_same_config(data_root, tmp_path, caplog):
    cfg = in_process(data_root, "resume=auto")
    config = comparable_config(cfg)
    other = {**config, "seed": 1}
    roots = [tmp_path / "outputs", tmp_path / "multirun"]
    fake_run(roots[0], "old-interrupted", config, "interrupted", True, 100)
    newest = fake_run(roots[1], "killed", config, None, True, 200)
    fake_run(roots[0], "completed", config, "completed", True, 300)
    fake_run(roots[0], "other-seed", other, "interrupted", True, 400)
    fake_run(roots[0], "no-checkpoint", config, "failed", False, 500)
    assert find_unfinished_run(runs_under(roots), config) == newest
    threads_differ = comparable_config(in_process(data_root, "resume=auto", "threads=2", "num_workers=3"))
    assert threads_differ == config  # where and how a run executes is not part of what it computes
    plan = plan_run(run_of(cfg), tmp_path / "new", roots)
    assert (plan.directory, plan.wandb_run_id, plan.checkpoint) == (
        newest,
        "killed",
        newest / "checkpoints" / "last.ckpt",
    )
    with caplog.at_level("INFO", logger="lra.job.resume"):
        fresh = plan_run(run_of(in_process(data_root, "resume=auto", "seed=7")), tmp_path / "new", roots)
    assert fresh.directory == tmp_path / "new" and fresh.checkpoint is None
    assert "no unfinished run of this config" in caplog.text and "starting afresh" in caplog.text


def test_runs_are_matched_by_the_config_their_run_json_records_by_todays_rule(data_root, tmp_path):
    config = comparable_config(in_process(data_root, "resume=auto"))
    folder = fake_run(tmp_path, "recorded", config, "interrupted", True, 100)
    assert find_unfinished_run(runs_under([tmp_path]), config) == folder
    record = json.loads((folder / RUN_FILE).read_text())
    # written before the logger joined IGNORED_KEYS: its config holds it, and it is still the same job
    older = {**record, "config": {**config, "logger": {"csv": True}}, "fingerprint": "an older hash"}
    (folder / RUN_FILE).write_text(json.dumps(older))
    assert find_unfinished_run(runs_under([tmp_path]), config) == folder
    (folder / RUN_FILE).write_text(json.dumps({**record, "config": {**config, "seed": 3}}))
    assert find_unfinished_run(runs_under([tmp_path]), config) is None  # another seed: another job


def test_resuming_a_completed_run_is_refused(data_root, tmp_path):
    cfg = in_process(data_root, "resume=auto")
    done = fake_run(tmp_path, "done", comparable_config(cfg), "completed", True, 100)
    OmegaConf.update(cfg, "resume", str(done))
    with pytest.raises(ConfigError, match="already completed"):
        plan_run(run_of(cfg), tmp_path / "new")


def test_same_seed_same_losses_and_accuracies(data_root, tmp_path):
    """Performer draws random features in every forward: its runs depend on the seed through them too."""

    def losses_and_summary(seed: int, folder: str) -> tuple[list[float], dict]:
        cfg = in_process(data_root, f"seed={seed}", attention="performer", max_steps=6)
        summary = run(cfg, tmp_path / folder)
        assert summary["status"] == "completed", summary["error"]
        return [value for _, value in csv_rows(tmp_path / folder, "train/loss")], summary

    losses, summary = losses_and_summary(0, "a")
    again, summary_again = losses_and_summary(0, "b")
    other, _ = losses_and_summary(1, "c")
    assert len(losses) == 6 and losses == again and losses != other
    for key in ("val/acc_best", "test/acc", "test/loss"):
        assert summary["metrics"][key] == summary_again["metrics"][key]
    assert summary["seed"] == 0 and summary["data"]["seed"] == 0  # the tiny listops set: seed 0
    assert summary["data"]["command"] == "tests/conftest.py"
    assert {"python", "torch", "lightning", "numpy", "lra"} <= set(summary["versions"])
