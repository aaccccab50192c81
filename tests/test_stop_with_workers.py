"""A SIGTERM to the whole process group while loader workers run, wherever the run stands: during an
evaluation (with workers that live for the whole fit, or start anew at each pass), in the
self-pretraining stage, and in a recall task that draws fresh batches. Each run stops as
``interrupted`` with its state saved, and after ``resume=auto`` ends as an uninterrupted run of the
same config, to the last bit (``lra.data.workers``, ``lra.job.training_state``)."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
import torch
from test_resume import (
    EVAL_EVERY,
    SIGNAL_STEP,
    WORKERS,
    assert_same_as,
    checkpoint,
    lra,
    short_run,
    signal_at,
)

from lra.job.checkpoint_files import WEIGHTS_FILE

SPT = ("pretrain=masked", "pretrain.steps=8")  # 5 steps an epoch: step 6 is inside the second
# mqar with fresh examples for every batch: 4 batches an epoch, so step 6 is inside the second.
FRESH_RECALL = (
    "task=mqar",
    "attention=standard",
    "task.training_set=fresh",
    "task.batch_size=4",
    "task.train_examples=16",
    "task.test_examples=8",
    "trainer=smoke",
    "trainer.max_steps=10",
    f"task.eval_every={EVAL_EVERY}",
    "logger=csv",
    f"num_workers={WORKERS}",
)


def only_run(cwd: Path) -> Path:
    (run_dir,) = [path for path in cwd.glob("outputs/*/*") if (path / "run.json").is_file()]
    return run_dir


def stop_and_resume(args: list[str], cwd: Path, where: str) -> Path:
    """Run ``args``, which signal the process group: the run must stop ``where`` (``SIGTERM at step 9``)
    as ``interrupted``; then continue it with ``resume=auto`` to its end. Its folder."""
    stopped = lra(args, cwd)
    assert stopped.returncode == 128 + signal.SIGTERM, stopped.stderr[-3000:]
    run_dir = only_run(cwd)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "interrupted" and where in summary["error"], summary["error"]
    resumed = lra([*args, "resume=auto"], cwd)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert json.loads((run_dir / "summary.json").read_text())["status"] == "completed"
    return run_dir


@pytest.mark.slow  # python -m lra in subprocesses, signalled mid-evaluation
@pytest.mark.parametrize("persistent", [True, False])
def test_a_signal_during_an_evaluation_stops_at_the_next_step(data_root, tmp_path, uninterrupted, persistent):
    """The signal lands during the evaluation after step 8 (its first batch served): the evaluation
    ends, training stops after step 9, and the run resumes from there."""
    sent = signal_at(2 * EVAL_EVERY, "SIGTERM", tmp_path / "sent", group=True, during="validation")
    anew = [] if persistent else ["persistent_workers=false"]
    args = short_run(data_root, "logger=csv", *anew, *sent)
    run_dir = stop_and_resume(args, tmp_path, f"SIGTERM at step {2 * EVAL_EVERY + 1}")
    assert_same_as(run_dir, uninterrupted)  # persistent_workers changes nothing a run computes


@pytest.fixture(scope="module")
def uninterrupted_spt(data_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    cwd = tmp_path_factory.mktemp("uninterrupted_spt")
    result = lra(short_run(data_root, "logger=csv", *SPT), cwd)
    assert result.returncode == 0, result.stderr[-3000:]
    return only_run(cwd)


@pytest.mark.slow  # python -m lra in subprocesses, signalled mid-pretraining
def test_a_signal_in_the_pretraining_stage_stops_it_and_the_run_resumes_there(
    data_root, tmp_path, uninterrupted_spt
):
    sent = [
        *signal_at(SIGNAL_STEP, "SIGTERM", tmp_path / "sent", group=True),
        "+callbacks.signal.module=MaskedPretrainModule",
    ]
    run_dir = stop_and_resume(
        short_run(data_root, "logger=csv", *SPT, *sent), tmp_path, "SIGTERM at pretraining step 6"
    )
    pretrained = [
        torch.load(folder / "checkpoints" / WEIGHTS_FILE, weights_only=True)["encoder"]
        for folder in (run_dir, uninterrupted_spt)
    ]
    assert all(torch.equal(pretrained[0][key], pretrained[1][key]) for key in pretrained[1])
    assert_same_as(run_dir, uninterrupted_spt, ("pretrain/loss", "val/pretrain_acc"))


@pytest.mark.slow  # python -m lra in subprocesses, signalled mid-epoch
def test_fresh_recall_batches_resume_exactly(tmp_path):
    whole_cwd, cwd = tmp_path / "whole", tmp_path / "stopped"
    whole_cwd.mkdir(), cwd.mkdir()
    result = lra(list(FRESH_RECALL), whole_cwd)
    assert result.returncode == 0, result.stderr[-3000:]
    sent = signal_at(SIGNAL_STEP, "SIGTERM", tmp_path / "sent", group=True)
    run_dir = stop_and_resume([*FRESH_RECALL, *sent], cwd, f"SIGTERM at step {SIGNAL_STEP}")
    assert checkpoint(run_dir / "checkpoints" / "last.ckpt")["global_step"] == 10
    assert_same_as(run_dir, only_run(whole_cwd))
