"""Whole runs against a corrupt checkpoint, a full disk and a second writer (issue 31, points 3-5): each
ends with one line, and a later ``resume=auto`` never takes a bad file for a good one."""

from __future__ import annotations

import errno
import json
import os
import re
import socket
from pathlib import Path

import lightning as L
import torch
from helpers.records import run_of
from lightning.pytorch.callbacks import Callback
from test_checkpoint_files import flip_a_byte
from test_resume import EVAL_EVERY, in_process

from lra.job.checkpoint_files import checkpoint_fault
from lra.job.resume import checkpoint_step, plan_run
from lra.job.run_lock import RunLock
from lra.job.train import run

MAX_STEPS = 2 * EVAL_EVERY


def completed_run(data_root: Path, folder: Path) -> dict:
    summary = run(in_process(data_root, max_steps=MAX_STEPS), folder)
    assert summary["status"] == "completed", summary["error"]
    return summary


def hidden_files(folder: Path) -> list[Path]:
    """Temporary files anywhere under ``folder`` (``.NAME.tmp-PID``): what an interrupted write leaves."""
    return [path for path in folder.rglob(".*") if ".tmp-" in path.name]


def test_a_corrupt_last_checkpoint_falls_back_to_the_newest_that_verifies(data_root, tmp_path, caplog):
    folder = tmp_path / "run"
    completed_run(data_root, folder)
    (folder / "summary.json").unlink()  # as after a SIGKILL past the last evaluation
    last, best = folder / "checkpoints" / "last.ckpt", folder / "checkpoints" / "best.ckpt"
    flip_a_byte(last)  # inside the saved tensors; size and mtime kept
    assert torch.load(last, weights_only=True)["global_step"] == MAX_STEPS  # torch loads it unawares
    with caplog.at_level("WARNING"):
        plan = plan_run(run_of(in_process(data_root, "resume=auto", max_steps=MAX_STEPS)), folder)
    assert plan.directory == folder and plan.checkpoint == best
    (line,) = [message for message in caplog.messages if message.startswith("resume:")]
    assert str(last) in line and str(best) in line

    summary = run(in_process(data_root, "resume=auto", max_steps=MAX_STEPS), folder)
    assert summary["status"] == "completed", summary["error"]
    assert summary["resumed_from"] == str(best) and summary["metrics"]["train/steps"] == MAX_STEPS
    assert checkpoint_fault(last) is None  # written anew by the resumed run

    flip_a_byte(last)
    flip_a_byte(best)
    (folder / "summary.json").unlink()
    refused = run(in_process(data_root, "resume=auto", max_steps=MAX_STEPS), folder)
    assert refused["status"] == "failed" and "\n" not in refused["error"]
    assert refused["error"].startswith(
        f"resume: no checkpoint of {folder} verifies (last.ckpt fails its SHA-256"
    )


def test_a_full_disk_is_one_line_and_resume_auto_continues_from_the_last_good_checkpoint(
    data_root, tmp_path, monkeypatch
):
    folder = tmp_path / "run"
    fsync, calls = os.fsync, []

    def disk_fills_after_the_first_evaluation(handle):
        calls.append(handle)
        if len(calls) > 4:  # two files of the first evaluation (best, last), each and its folder
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        fsync(handle)

    monkeypatch.setattr(os, "fsync", disk_fills_after_the_first_evaluation)
    summary = run(in_process(data_root, max_steps=MAX_STEPS), folder)
    monkeypatch.undo()
    last = folder / "checkpoints" / "last.ckpt"
    assert summary["status"] == "failed"
    assert re.fullmatch(
        rf"no space left on device writing {folder}/checkpoints/(best|last)\.ckpt; "
        rf"the last good checkpoint is {last}; free space, then resume=auto",
        summary["error"],
    )
    assert checkpoint_step(last) == EVAL_EVERY and checkpoint_fault(last) is None
    assert hidden_files(folder) == [] and not (folder / "traceback.txt").exists()

    resumed = run(in_process(data_root, "resume=auto", max_steps=MAX_STEPS), folder)
    assert resumed["status"] == "completed", resumed["error"]
    assert resumed["resumed_from"] == str(last) and resumed["metrics"]["train/steps"] == MAX_STEPS


def test_a_full_disk_after_training_prints_the_metrics(data_root, tmp_path, monkeypatch, capsys):
    folder = tmp_path / "run"
    write_text = Path.write_text

    def full_for_the_summary(path: Path, text: str) -> None:
        if path.name.startswith(".summary.json.tmp-"):
            path.touch()  # as a real full disk: the file is created, its content is not
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        write_text(path, text)

    monkeypatch.setattr(Path, "write_text", full_for_the_summary)
    summary = run(in_process(data_root, max_steps=EVAL_EVERY), folder)
    monkeypatch.undo()
    printed = capsys.readouterr().out
    (metrics_line,) = [line for line in printed.splitlines() if line.startswith("metrics: ")]
    metrics = json.loads(metrics_line.removeprefix("metrics: "))
    assert metrics["test/acc"] is not None and metrics["train/steps"] == EVAL_EVERY
    assert summary["metrics"] == metrics and summary["status"] == "failed"
    assert summary["error"].startswith(f"no space left on device writing {folder / 'summary.json'};")
    assert not (folder / "summary.json").exists() and hidden_files(folder) == []


def test_a_run_folder_held_by_another_writer_is_refused_untouched(data_root, tmp_path):
    folder = tmp_path / "run"
    holder = RunLock.acquire(folder)  # another job: flock locks conflict between open files
    summary = run(in_process(data_root), folder)
    assert summary["status"] == "failed"
    assert summary["error"].startswith(
        f"the run folder {folder} is in use by pid {os.getpid()} on host {socket.gethostname()} since "
    )
    assert sorted(path.name for path in folder.iterdir()) == ["run.lock"]  # nothing written there
    holder.release()
    assert run(in_process(data_root), folder)["status"] == "completed"
    RunLock.acquire(folder).release()  # the run released its lock as it ended


def test_pretraining_checkpoints_are_stamped_too(data_root, tmp_path):
    folder = tmp_path / "run"
    cfg = in_process(data_root, "pretrain=masked", "pretrain.steps=4", max_steps=EVAL_EVERY)
    summary = run(cfg, folder)
    assert summary["status"] == "completed", summary["error"]
    stamps = json.loads((folder / "checkpoints" / "stamps.json").read_text())
    assert {"pretrain-last.ckpt", "pretrain-best.ckpt", "pretrained.pt", "last.ckpt", "best.ckpt"} <= set(
        stamps
    )


def test_resuming_a_run_held_by_another_process_stops_and_leaves_it_alone(data_root, tmp_path):
    folder, job = tmp_path / "run", tmp_path / "job"
    completed_run(data_root, folder)
    (folder / "summary.json").unlink()  # as after a SIGKILL past the last evaluation
    before = sorted(folder.rglob("*"))
    holder = RunLock.acquire(folder)  # another resume of it, started first
    refused = run(in_process(data_root, f"resume={folder}", max_steps=MAX_STEPS), job)
    assert refused["status"] == "failed" and refused["error"].startswith(
        f"the run folder {folder} is in use by pid"
    )
    assert sorted(folder.rglob("*")) == before and not (job / "resumed.json").exists()
    assert not (job / "summary.json").exists()  # a refused job writes nothing
    holder.release()
    resumed = run(in_process(data_root, f"resume={folder}", max_steps=MAX_STEPS), job)
    assert resumed["status"] == "completed" and resumed["output_dir"] == str(folder), resumed["error"]


class CorruptTheBestCheckpoint(Callback):
    """Flips a byte of the best checkpoint as fitting ends, before the run tests it."""

    def on_train_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        flip_a_byte(Path(trainer.checkpoint_callback.best_model_path))


def test_the_best_checkpoint_is_verified_before_it_is_tested(data_root, tmp_path):
    corrupt = ["+callbacks.corrupt._target_=test_run_integrity.CorruptTheBestCheckpoint"]
    summary = run(in_process(data_root, *corrupt, max_steps=EVAL_EVERY), tmp_path)
    best = tmp_path / "checkpoints" / "best.ckpt"
    assert summary["status"] == "failed"
    assert (
        summary["error"]
        == f"the checkpoint {best} fails its SHA-256 (altered since it was written); it is not loaded"
    )
    assert summary["metrics"]["test/acc"] is None
