"""A run interrupted mid-epoch and resumed ends, on the CPU, exactly where an uninterrupted run ends:
the same weights (``torch.equal``), losses and metrics, since the checkpoint carries the training
sampler's position and the RNG states (``lra.job.training_state``), with loader workers or without."""

from __future__ import annotations

import json

import pytest
import torch
from test_resume import EVAL_EVERY, MAX_STEPS, checkpoint, csv_rows, in_process, signal_at

from lra.data import EpochPermutationSampler
from lra.job.job_end import SIGTERM_EXIT_STATUS
from lra.job.train import run

# 40 training examples in batches of 8: 5 steps an epoch, so step 7 is mid-way through the second epoch.
STOP_STEP = 7


def test_the_sampler_resumes_inside_an_epoch_and_starts_the_next_one_whole():
    sampler = EpochPermutationSampler(10, seed=3)
    sampler.set_epoch(1)
    whole = list(sampler)
    sampler.resume_at(1, 4)
    sampler.set_epoch(1)  # Lightning sets the epoch again as the resumed run starts it
    assert list(sampler) == whole[4:] + whole[:4]  # as long as __len__ says: the batches left come first
    assert list(sampler) == whole  # only the first pass is rotated
    sampler.resume_at(1, 4)
    sampler.set_epoch(2)
    assert len(list(sampler)) == 10


def test_ddp_shards_resume_where_the_processes_stood_and_yield_their_length():
    """Two processes: each takes every other index, the permutation padded with its head (41 = 2 * 21 - 1);
    resumed after 2 batches of 4 in each, each yields what it had left first, and as many as ``len``."""
    shards = [EpochPermutationSampler(41, seed=3) for _ in range(2)]
    for rank, sampler in enumerate(shards):
        sampler.shard(2, rank)
        sampler.set_epoch(1)
    whole = [list(sampler) for sampler in shards]
    assert sorted(whole[0] + whole[1]) == sorted([*range(41), whole[0][0]])
    for rank, sampler in enumerate(shards):
        sampler.resume_at(1, 2 * 4 * 2)
        sampler.set_epoch(1)
        resumed = list(sampler)
        assert len(resumed) == len(sampler) == 21
        assert resumed[: 21 - 8] == whole[rank][8:]


@pytest.mark.slow  # three short trainings per case
@pytest.mark.parametrize(
    ("attention", "workers"),  # dropout, then random features too; loader workers as the LRA tasks have
    [("standard", 0), ("standard", 1), ("standard", 2), ("performer", 2)],
)
def test_interrupted_and_resumed_equals_uninterrupted_bit_for_bit(data_root, tmp_path, attention, workers):
    options = ["protocol.attention_dropout=0.1", "model.dropout=0.2", f"num_workers={workers}"]
    whole = run(in_process(data_root, *options, attention=attention), tmp_path / "whole")
    assert whole["status"] == "completed", whole["error"]

    stop = signal_at(STOP_STEP, "SIGTERM", tmp_path / "sent")
    with pytest.raises(SystemExit) as stopped:
        run(in_process(data_root, *options, *stop, attention=attention), tmp_path / "parts")
    assert stopped.value.code == SIGTERM_EXIT_STATUS
    saved = checkpoint(tmp_path / "parts" / "checkpoints" / "last.ckpt")
    assert saved["global_step"] == STOP_STEP
    assert {k: saved["callbacks"]["TrainingOrderState"][k] for k in ("epoch", "index")} == {
        "epoch": 1,
        "index": 16,
    }
    resumed = run(
        in_process(data_root, *options, *stop, f"resume={tmp_path / 'parts'}", attention=attention),
        tmp_path / "job",
    )
    assert resumed["status"] == "completed", resumed["error"]

    final = {name: checkpoint(tmp_path / name / "checkpoints" / "last.ckpt") for name in ("whole", "parts")}
    assert final["whole"]["global_step"] == final["parts"]["global_step"] == MAX_STEPS
    weights = {name: state["state_dict"] for name, state in final.items()}
    assert weights["whole"].keys() == weights["parts"].keys()
    assert all(torch.equal(weights["whole"][key], weights["parts"][key]) for key in weights["whole"])
    for column in ("train/loss", "val/acc", "val/loss"):
        assert csv_rows(tmp_path / "whole", column) == csv_rows(tmp_path / "parts", column)
    for key in ("val/acc_best", "test/acc", "test/loss"):
        assert whole["metrics"][key] == resumed["metrics"][key]
    assert len(csv_rows(tmp_path / "parts", "val/acc")) == MAX_STEPS // EVAL_EVERY
    assert json.loads((tmp_path / "job" / "resumed.json").read_text())["continues"] == str(tmp_path / "parts")
