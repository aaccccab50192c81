"""The options of ``pretrain=masked``: a sweep over ``pretrain=none,masked`` takes them (a run from scratch
composes with them, ignores them, and neither its name nor its identity carries them); Image's loss and
Retrieval's batch are Amos et al.'s."""

from __future__ import annotations

import json

import pytest
import torch
from conftest import compose_config, tiny_data_overrides
from test_harness_cli import lra_command

from lra.config.naming import SWEPT_KEYS_ENV, job_name, record_swept_keys
from lra.job.checks import check_config, is_masked, stage_steps
from lra.job.resolve import comparable_config, data_record, summary_record
from lra.model.pretraining import PretrainInputs, sequences

MASKED_OPTIONS = ["pretrain.steps=100", "pretrain.mask_prob=0.2", "pretrain.loss=l1", "pretrain.lr=1e-4"]


def test_a_run_from_scratch_composes_with_the_masked_options_and_ignores_them():
    cfg = compose_config(["pretrain=none", *MASKED_OPTIONS, "trainer.max_steps=50"])
    check_config(cfg)
    steps = stage_steps(cfg)
    assert not is_masked(cfg) and (steps.pretrain, steps.finetune) == (0, 50)
    assert comparable_config(cfg) == comparable_config(compose_config(["trainer.max_steps=50"]))
    masked = compose_config(["pretrain=masked", *MASKED_OPTIONS])
    assert (masked.pretrain.steps, masked.pretrain.mask_prob, masked.pretrain.loss) == (100, 0.2, "l1")


def test_a_run_from_scratch_is_named_without_the_swept_masked_options(monkeypatch):
    monkeypatch.setenv(SWEPT_KEYS_ENV, "")  # restored after the test: the sweep's keys do not leak
    record_swept_keys(["pretrain=none,masked", "pretrain.steps=100,200"])
    scratch = ["pretrain=none", "pretrain.steps=200"]
    assert job_name("listops", "nystrom", 0, scratch, "none") == "listops-nystrom-pretrain=none-s0"
    masked = ["pretrain=masked", "pretrain.steps=200"]
    assert (
        job_name("listops", "nystrom", 0, masked, "masked") == "listops-nystrom-pretrain=masked-steps=200-s0"
    )
    record = summary_record(compose_config(scratch), scratch).job
    assert (record["name"], record["options"]) == ("listops-nystrom-pretrain=none-s0", {"pretrain": "none"})


@pytest.mark.slow  # a sweep of python -m lra in a subprocess
def test_a_sweep_over_none_and_masked_with_masked_options_runs_both(data_root, tmp_path):
    command = ["-m", "pretrain=none,masked", "pretrain.steps=2", *tiny_data_overrides(data_root)]
    done = lra_command(command, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    (sweep,) = (tmp_path / "multirun").iterdir()
    jobs = sorted(path for path in sweep.iterdir() if path.is_dir())
    assert [path.name for path in jobs] == [
        "0_listops-nystrom-pretrain=none-s0",
        "1_listops-nystrom-pretrain=masked-s0",
    ]
    summaries = [json.loads((job / "summary.json").read_text()) for job in jobs]
    assert [summary["status"] for summary in summaries] == ["completed", "completed"]
    assert summaries[0]["pretrain"] is None and summaries[1]["pretrain"]["steps"] == 2


def test_image_pretrains_with_l1_as_the_authors():
    assert compose_config(["task=image", "pretrain=masked"]).pretrain.loss == "l1"


def test_a_retrieval_pretraining_batch_counts_examples_of_two_documents(data_root):
    """IdoAmos/not-from-scratch's AAN pretraining loader concatenates a batch's first and second documents:
    a batch of 32 pairs is 64 documents. Here pretrain.batch_size=4 gives 8 documents, each one sequence."""
    cfg = compose_config(
        ["task=retrieval", "pretrain=masked", "pretrain.batch_size=4", f"data_root={data_root}"]
    )
    cfg.task.seq_len = 32  # the tiny sets' length
    inputs = PretrainInputs.of_record(data_record(cfg, cfg.pretrain.batch_size))
    inputs.setup("fit")
    tokens, lengths = next(iter(inputs.train_dataloader()))
    assert (tokens.shape, lengths.shape) == ((4, 2, 32), (4, 2))
    flat_tokens, flat_lengths = sequences((tokens, lengths))
    assert (flat_tokens.shape, flat_lengths.shape) == ((8, 32), (8,))
    torch.testing.assert_close(flat_tokens[1], tokens[0, 1])  # example 0's second document
    assert len(inputs.splits["train"]) == len(
        inputs.prepared.split("train").tokens
    )  # examples, not documents
