"""Pre-emption under DDP, on 2 CPU processes (gloo) with loader workers: a SIGTERM to the process group
(every rank and every worker) at a random step, and then a SIGINT to process 0 alone at a later random
step of the resumed run, each stop both processes at that step with one checkpoint and the status
``interrupted``; ``resume=auto`` continues the run in its folder each time, and it ends where an
uninterrupted DDP run of the same config ends (``lra.job.agreed_stop``, ``lra.job.rank_plan``)."""

from __future__ import annotations

import json
import random
import re
import signal
from pathlib import Path

import lightning as L
import pytest
import torch
from test_resume import (
    MAX_STEPS,
    SIGNAL_STEP,
    assert_finished_as_one_run,
    checkpoint,
    csv_rows,
    in_process,
    lra,
    run_folders,
    short_run,
)
from test_resume import signal_at as signal_at_step

from lra.job.agreed_stop import StopFlag
from lra.job.train import run

DDP = ("trainer.strategy=ddp", "trainer.devices=2", "logger=csv")
STEPS_PER_EPOCH = 2  # 40 training examples, 2 processes, batches of 8 (drop_last)
# The resumed run may differ from the uninterrupted one in the last float bits only (docs/running.md).
TOLERANCE = 1e-6


def signal_at(key: str, step: int, name: str, marker: Path, group: bool = False) -> list[str]:
    """``test_resume.signal_at`` under the ``callbacks.<key>`` key, so that one run can hold two."""
    return [
        override.replace("callbacks.signal.", f"callbacks.{key}.")
        for override in signal_at_step(step, name, marker, group=group)
    ]


def close(first: float, second: float) -> bool:
    return abs(first - second) <= TOLERANCE * max(1.0, abs(first))


def stop_and_check(args: list[str], cwd: Path, name: str, step: int) -> Path:
    """Run ``args``, which send ``name`` after ``step``; check that both processes stopped at that step
    (the next one, when it ends an epoch: ``lra.job.agreed_stop.epoch_ends_here``) with one line, the
    status and the checkpoint."""
    step += step % STEPS_PER_EPOCH == 0
    where = f"{name} at step {step}"
    stopped = lra(args, cwd)
    assert stopped.returncode == 128 + signal.Signals[name], f"{where}: {stopped.stderr[-3000:]}"
    assert re.match(f"lra: interrupted: {where}[,;]", stopped.stderr.strip().splitlines()[-1])
    (run_dir,) = run_folders(cwd)[:1]  # the first folder: the run, continued in place
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "interrupted" and where in summary["error"]
    assert checkpoint(run_dir / "checkpoints" / "last.ckpt")["global_step"] == step, where
    return run_dir


def test_a_handler_only_notes_the_signal_and_a_second_ctrl_c_interrupts():
    flag = StopFlag(L.Trainer(logger=False, enable_progress_bar=False, enable_model_summary=False))
    flag.note(signal.SIGINT, None)
    flag.note(signal.SIGTERM, None)
    assert flag.noted == signal.SIGTERM and not flag.received_sigterm  # nothing stops until agreed
    with pytest.raises(KeyboardInterrupt):
        flag.note(signal.SIGINT, None)


def test_ctrl_c_on_one_process_stops_at_the_step_and_saves(data_root, tmp_path):
    with pytest.raises(SystemExit) as stopped:
        run(
            in_process(data_root, *signal_at_step(SIGNAL_STEP, "SIGINT", tmp_path / "sent")), tmp_path / "run"
        )
    assert stopped.value.code == 128 + signal.SIGINT
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["status"] == "interrupted"
    assert re.match(f"SIGINT at step {SIGNAL_STEP}[,;]", summary["error"])
    assert checkpoint(tmp_path / "run" / "checkpoints" / "last.ckpt")["global_step"] == SIGNAL_STEP


@pytest.mark.slow  # four DDP runs of two processes each
@pytest.mark.usefixtures("one_ddp_run_at_a_time")
def test_a_ddp_run_stopped_twice_and_resumed_ends_as_an_uninterrupted_one(data_root, tmp_path):
    whole_cwd, cwd = tmp_path / "whole", tmp_path / "stopped"
    whole_cwd.mkdir(), cwd.mkdir()
    result = lra(short_run(data_root, *DDP), whole_cwd)
    assert result.returncode == 0, result.stderr[-3000:]
    (whole_dir,) = run_folders(whole_cwd)

    first = random.randint(2, MAX_STEPS // 2 - 1)
    second = random.randint(first + 3, MAX_STEPS - 2)  # after the step the first stop was put off to
    # Both signals in every run's config (a resumed run has its run's config); each is sent once.
    group_term = signal_at("term", first, "SIGTERM", tmp_path / "term", group=True)  # from another process
    main_int = [*signal_at("int", second, "SIGINT", tmp_path / "int"), "+callbacks.int.rank=0"]
    steps = f"SIGTERM at step {first}, SIGINT at step {second}"
    args = short_run(data_root, *DDP, *group_term, *main_int)
    run_dir = stop_and_check(args, cwd, "SIGTERM", first)
    assert stop_and_check([*args, "resume=auto"], cwd, "SIGINT", second) == run_dir
    resumed = lra([*args, "resume=auto"], cwd)
    assert resumed.returncode == 0, f"{steps}: {resumed.stderr[-3000:]}"

    summary = assert_finished_as_one_run(run_dir)  # the same folder, every step logged once
    assert summary["resumed_from"] == str(run_dir / "checkpoints" / "last.ckpt")
    whole = json.loads((whole_dir / "summary.json").read_text())["metrics"]
    for key in ("test/acc", "test/loss", "val/acc_best"):
        assert close(whole[key], summary["metrics"][key]), f"{key} after {steps}"
    losses = zip(csv_rows(whole_dir, "train/loss"), csv_rows(run_dir, "train/loss"), strict=True)
    assert all(close(a, b) for (_, a), (_, b) in losses), f"train/loss after {steps}"
    final = [
        checkpoint(folder / "checkpoints" / "last.ckpt")["state_dict"] for folder in (whole_dir, run_dir)
    ]
    for key, weights in final[0].items():
        assert torch.allclose(weights.float(), final[1][key].float(), rtol=TOLERANCE, atol=TOLERANCE), key
