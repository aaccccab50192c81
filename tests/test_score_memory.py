"""The line before a run whose (n × n) attention scores need more memory than the device has free: the
estimate, and the accumulation that trains the same in less; free memory is mocked, never allocated."""

from __future__ import annotations

import logging

import pytest
import torch
from conftest import compose_config, smoke_overrides

from lra.config.records import ModelRecord
from lra.job import memory, score_memory
from lra.job.resolve import job_records
from lra.job.score_memory import holds_scores, kept_per_score, score_bytes, score_memory_line

GB = 10**9


def model(attention: str = "standard", seq_len: int = 2000, **options) -> ModelRecord:
    """An encoder of ListOps' length (``experiment=lra``'s 8 heads and 6 layers, unless ``options``)."""
    shape = {"num_heads": 8, "depth": 6, "cls_token": False, **options}
    node = {"name": attention}
    return ModelRecord(5, 10, seq_len, False, node, shape, False)


def test_the_cores_that_approximate_nothing_hold_their_scores():
    assert holds_scores("standard") and holds_scores("kernelized")
    assert not any(holds_scores(name) for name in ("nystrom", "skyformer", "performer", "window", "s4d"))


def test_the_bytes_kept_per_score_are_measured_on_the_backend():
    dropped = {"name": "standard", "attention_dropout": 0.1}
    assert kept_per_score(dropped, torch.device("cpu"), "32-true") == 12  # softmax, mask, dropped: fp32
    assert kept_per_score({**dropped, "attention_dropout": 0.0}, torch.device("cpu"), "32-true") == 0
    kernelized = {"name": "kernelized", "attention_dropout": 0.1}
    assert kept_per_score(kernelized, torch.device("cpu"), "32-true") >= 12
    state = torch.random.get_rng_state()
    kept_per_score(dropped, torch.device("cpu"), "32-true")
    assert not torch.equal(state, torch.random.get_rng_state())  # hence the run's fork_rng around it


def test_the_estimate_is_batch_heads_n_squared_layers_and_bytes_per_score():
    assert score_bytes(model(), 32, 12) == 32 * 8 * 2000 * 2000 * 6 * 12
    assert score_bytes(model(seq_len=4, cls_token=True), 1, 4) == 8 * 5 * 5 * 6 * 4  # n counts CLS
    dual = ModelRecord(5, 2, 4, True, {"name": "standard"}, {"num_heads": 1, "depth": 1}, False)
    assert score_bytes(dual, 3, 4) == 2 * 3 * 4 * 4 * 4  # two documents an example


def test_a_run_short_of_memory_gets_one_line_with_the_accumulation_that_fits():
    line = score_memory_line(model(), 32, 4, 1, (22 * GB, "MemAvailable, /proc/meminfo"))
    assert line == (
        "out of memory ahead: attention 'standard' keeps (n x n) scores of 24.6 GB at least (batch 32, "
        "8 heads, n=2000, 6 layers, 4 bytes a score), more than the 22.0 GB free (MemAvailable, "
        "/proc/meminfo); the same training in less: trainer.accumulate_grad_batches=2 task.batch_size=16"
    )
    already = score_memory_line(model(), 32, 4, 2, (7 * GB, "x"))  # batch 32 a micro-batch, 64 a step
    assert already.endswith("trainer.accumulate_grad_batches=8 task.batch_size=8")
    assert "even task.batch_size=1 needs more" in score_memory_line(model(), 32, 4, 1, (GB // 2, "x"))


def test_no_line_when_the_scores_fit_or_free_memory_is_unknown():
    assert score_memory_line(model(), 32, 4, 1, (25 * GB, "x")) is None
    assert score_memory_line(model(), 32, 4, 1, None) is None


def test_the_run_warns_before_it_trains(data_root, tmp_path, monkeypatch, caplog):
    from lra.job.train import run

    monkeypatch.setattr(score_memory, "free_memory", lambda on_gpu: (1000, "mocked"))
    overrides = smoke_overrides(data_root, "listops", "standard", "attention.attention_dropout=0.1")
    with caplog.at_level(logging.WARNING, logger="lra.job.train"):
        assert run(compose_config(overrides), tmp_path / "run")["status"] == "completed"
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("out of memory ahead")]
    assert len(lines) == 1 and "more than the 0.0 GB free (mocked)" in lines[0]
    assert lines[0].endswith("even task.batch_size=1 needs more: a shorter sequence or an approximation")
    monkeypatch.setattr(score_memory, "free_memory", lambda on_gpu: pytest.fail("read for nystrom"))
    for attention, extra in (("nystrom", "seed=0"), ("standard", "attention.attention_dropout=0")):
        records = job_records(compose_config(smoke_overrides(data_root, "listops", attention, extra)))
        assert score_memory.warning_before_run(records.model, records.data, records.trainer) is None


def test_free_memory_on_the_cpu_is_the_least_of_meminfo_and_the_cgroup(tmp_path, monkeypatch):
    (tmp_path / "meminfo").write_text("MemTotal: 100 kB\nMemAvailable:   2048 kB\n")
    monkeypatch.setattr(memory, "MEMINFO", tmp_path / "meminfo")
    monkeypatch.setattr(memory, "CGROUP_MEMORY", tmp_path / "cgroup")
    assert memory.cpu_free() == (2048 * 1024, f"MemAvailable, {tmp_path / 'meminfo'}")
    (tmp_path / "cgroup").mkdir()
    (tmp_path / "cgroup" / "memory.max").write_text("max\n")
    (tmp_path / "cgroup" / "memory.current").write_text("5\n")
    assert memory.cpu_free()[0] == 2048 * 1024
    (tmp_path / "cgroup" / "memory.max").write_text("1005\n")
    assert memory.cpu_free()[0] == 1000
