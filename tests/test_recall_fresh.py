"""``task.training_set=fresh``: a recall task's training examples drawn anew for every batch
(lra/data/recall.py), reproducible from the seed, resumable mid-epoch, and never a batch twice."""

from __future__ import annotations

import pytest
import torch
from conftest import compose_config
from test_recall_tasks import TINY

from lra.config.errors import ConfigError
from lra.config.records import RecallRecord
from lra.data.recall import RecallDataModule
from lra.job.checks import check_config
from lra.job.train import run

CELL = {"vocab_size": 128, "input_seq_len": 64, "num_kv_pairs": 8}


def fresh_module(seed: int = 0, batch: int = 8, epoch_examples: int = 32) -> RecallDataModule:
    record = RecallRecord("mqar", CELL, epoch_examples, 16, training_set="fresh")
    module = RecallDataModule(recall=record, batch_size=batch, seed=seed)
    module.setup("fit")
    return module


def epoch_batches(module: RecallDataModule, epoch: int) -> list[torch.Tensor]:
    module.train_sampler.set_epoch(epoch)
    return [tokens for tokens, _, _ in module.train_dataloader()]


def test_fresh_batches_are_new_every_batch_and_epoch_and_the_same_from_the_same_seed():
    module = fresh_module()
    batches = epoch_batches(module, 0) + epoch_batches(module, 1)
    assert len(batches) == 8 and all(tokens.shape == (8, 64) for tokens in batches)
    rows = {tuple(row.tolist()) for tokens in batches for row in tokens}
    assert len(rows) == 8 * 8  # no example twice over two epochs
    again = fresh_module()
    replayed = epoch_batches(again, 0) + epoch_batches(again, 1)
    assert all(torch.equal(a, b) for a, b in zip(batches, replayed, strict=True))
    other = epoch_batches(fresh_module(seed=1), 0)
    assert not torch.equal(other[0], batches[0])


def test_a_fresh_run_resumed_mid_epoch_sees_the_batches_an_uninterrupted_one_does():
    whole = epoch_batches(fresh_module(), 1)
    resumed = fresh_module()
    resumed.train_sampler.resume_at(1, 2 * 8)  # two batches of epoch 1 done
    tail = [tokens for tokens, _, _ in resumed.train_dataloader()]
    assert all(torch.equal(a, b) for a, b in zip(whole[2:], tail, strict=False)) and len(tail) >= 2


def test_fresh_examples_have_the_generators_form():
    tokens, lengths, targets = next(iter(fresh_module().train_dataloader()))
    assert tokens.dtype == targets.dtype == torch.int64 and (lengths == 64).all()
    labelled = targets != -100
    assert (labelled.sum(1) == CELL["num_kv_pairs"]).all()
    assert (targets[labelled] >= 64).all()  # values: the upper half of the vocabulary


def test_a_fresh_run_trains_and_records_its_training_set(tmp_path):
    overrides = ["task=mqar", "attention=standard", "task.training_set=fresh", *TINY]
    summary = run(compose_config(overrides), tmp_path)
    assert summary["status"] == "completed", summary["error"]
    assert summary["data"]["training_set"] == "fresh"
    assert summary["config"]["task"]["training_set"] == "fresh"


def test_an_unknown_training_set_stops_in_one_line():
    with pytest.raises(ConfigError, match="task.training_set='sometimes' is invalid") as raised:
        check_config(compose_config(["task=mqar", "task.training_set=sometimes"]))
    assert "\n" not in str(raised.value)
