"""``python -m lra.bench train-speed`` on tiny shapes: the harness step, rows, files; no timing asserted."""

from __future__ import annotations

import csv
import warnings
from pathlib import Path

import pytest
import torch

from lra.bench.__main__ import main
from lra.bench.measuring import Isolation
from lra.bench.train_speed import CSV_COLUMNS, ratio_to_reference
from lra.bench.train_speed_measure import (
    HarnessStep,
    TrainSpeedConfig,
    TrainSpeedRow,
    failed,
    job_config,
    measure,
    random_batch,
)

TINY = ("task.seq_len=32", "task.batch_size=4", "features=8")


def read_csv(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open() as handle:
        reader = csv.DictReader(handle)
        return list(reader.fieldnames or []), list(reader)


def test_random_batch_has_the_real_shape_of_a_dual_task():
    task = job_config("retrieval", "standard").task
    tokens, lengths, labels = random_batch(task, torch.device("cpu"))
    assert tokens.shape == (16, 2, 4000) and lengths.shape == (16, 2) and labels.shape == (16,)
    assert tokens.min() >= 1 and tokens.max() < task.vocab_size and (lengths == 4000).all()
    assert labels.min() >= 0 and labels.max() < task.num_classes


def test_a_recall_task_steps_its_token_head_on_a_label_at_every_position():
    cfg = job_config("mqar", "standard", ["experiment=diagnostics_cpu"])
    tokens, _, labels = random_batch(cfg.task, torch.device("cpu"))
    assert tokens.shape == labels.shape == (64, 64) and labels.max() < cfg.task.num_classes
    step = HarnessStep.build(cfg, torch.device("cpu"))
    step()
    assert step.steps_done == 1


def test_harness_step_trains_steps_the_scheduler_and_does_not_warn_about_logging():
    step = HarnessStep.build(job_config("listops", "nystrom", TINY), torch.device("cpu"))
    before = [p.detach().clone() for p in step.module.parameters()]
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*self.log.*")
        step()
        step()
    assert step.steps_done == 2
    assert any(not torch.equal(a, b) for a, b in zip(before, step.module.parameters(), strict=True))
    [scheduler] = [config.scheduler for config in step.schedulers]
    assert scheduler.last_epoch == 2  # stepped once per training step
    assert step.optimizer.param_groups[0]["lr"] == scheduler.get_last_lr()[0]


@pytest.mark.parametrize("algorithm", ["norm", "value"])
def test_gradient_clipping_follows_the_protocol(algorithm):
    cfg = job_config(
        "listops", "standard", [*TINY, f"protocol.clip={algorithm}", "protocol.clip_value=0.001"]
    )
    step = HarnessStep.build(cfg, torch.device("cpu"))
    step()
    grads = [p.grad for p in step.module.parameters() if p.grad is not None]
    if algorithm == "norm":
        assert torch.linalg.vector_norm(torch.stack([g.norm() for g in grads])) <= 0.001 * 1.0001
    else:
        assert max(g.abs().max() for g in grads) <= 0.001


def test_the_step_runs_under_the_precision_of_the_composed_config():
    assert TrainSpeedConfig("listops", "standard", TINY).compose().trainer.precision == "32-true"  # CPU run
    cfg = job_config("listops", "standard", [*TINY, "trainer.precision=bf16-mixed"])
    step = HarnessStep.build(cfg, torch.device("cpu"))
    with step.autocast():
        assert torch.is_autocast_enabled("cpu") and torch.get_autocast_dtype("cpu") == torch.bfloat16
    step()
    with pytest.raises(ValueError, match="trainer.precision='64-true' is not measured here"):
        TrainSpeedConfig("listops", "standard", (*TINY, "trainer.precision=64-true")).compose_checked()


def test_train_speed_tiny_run_writes_csv_and_markdown(tmp_path):
    argv = ["train-speed", "--tasks", "listops", "retrieval", "--attentions", "standard", "nystrom"]
    argv += ["--steps", "2", "--warmup", "1", "--overrides", *TINY, "--isolation", "inprocess"]
    assert main([*argv, "--device", "cpu", "--out", str(tmp_path)]) == 0

    columns, rows = read_csv(tmp_path / "train_speed_cpu.csv")
    assert tuple(columns) == tuple(CSV_COLUMNS)
    assert [(r["task"], r["attention"]) for r in rows] == [
        (t, a) for t in ("listops", "retrieval") for a in ("standard", "nystrom")
    ]
    for row in rows:
        assert row["status"] == "ok" and (row["batch"], row["seq_len"]) == ("4", "32")
        assert row["documents"] == ("2" if row["task"] == "retrieval" else "1")
        assert row["run_steps"] == "50000" and float(row["step_ms"]) > 0 and row["peak_mem_mb"] != ""
        projected = float(row["step_ms"]) * 50000 / 3_600_000
        assert float(row["projected_hours"]) == pytest.approx(projected, rel=0.01, abs=0.002)
    assert [r["paper_hours"] for r in rows] == ["2.24", "0.71", "8.33", "1.29"]  # Skyformer Table 2

    report = (tmp_path / "train_speed_cpu.md").read_text()
    for expected in (
        "# Training speed on cpu",
        "for comparison only",
        "- CPU: ",
        "- load average",
        "python -m lra.bench train-speed --tasks listops retrieval",
        "| listops | standard | 4 × 32 |",
        "| retrieval | nystrom | 4 × 32 × 2 |",
        "Hydra overrides: `task.seq_len=32`",
        "`trainer.precision` (`32-true`)",
    ):
        assert expected in report


def test_ratio_to_standard_beside_the_papers():
    def row(attention: str, step_ms: float | None, status: str = "ok") -> TrainSpeedRow:
        return TrainSpeedRow("listops", attention, 32, 2000, 1, 50000, step_ms, 1.0, status)

    rows = [row("standard", 400.0), row("nystrom", 100.0), row("performer", None, "oom")]
    assert ratio_to_reference(rows[1], rows) == "0.25 / 0.32"  # Table 2: 0.71 / 2.24
    assert ratio_to_reference(rows[2], rows) == "— / 0.33"  # no measurement; Table 2: 0.73 / 2.24
    assert ratio_to_reference(rows[1], rows[1:]) == "— / 0.32"


def test_a_bad_override_is_a_usage_error_before_anything_runs(capsys):
    with pytest.raises(SystemExit):
        main(
            ["train-speed", "--tasks", "listops", "--attentions", "nystrom", "--overrides", "task.seq_len=32"]
        )
    assert "exceeds task.seq_len=32" in capsys.readouterr().err


def test_a_failing_configuration_is_an_error_row():
    row = measure(TrainSpeedConfig("listops", "standard", (*TINY, "model.num_heads=3"), steps=1))
    assert (row.status, row.step_ms, row.projected_hours) == ("error", None, None)
    assert (row.batch, row.seq_len) == (4, 32)


@pytest.mark.slow
def test_subprocess_worker_measures_and_a_timeout_is_a_row():
    config = TrainSpeedConfig("retrieval", "standard", TINY, warmup=0, steps=1)
    cpu = torch.device("cpu")
    row = Isolation(cpu, mode="subprocess", timeout_s=120).measure(measure, failed, config)
    assert (row.status, row.documents, row.timed_steps) == ("ok", 2, 1) and row.step_ms > 0
    late = Isolation(cpu, mode="subprocess", timeout_s=0.05).measure(measure, failed, config)
    assert (late.status, late.step_ms, late.batch, late.seq_len) == ("timeout", None, 4, 32)


@pytest.mark.cuda
def test_train_speed_on_cuda_in_bf16(tmp_path):
    argv = ["train-speed", "--tasks", "listops", "retrieval", "--attentions", "standard", "skyformer"]
    argv += ["--steps", "2", "--warmup", "1", "--overrides", *TINY, "--device", "cuda"]
    assert main([*argv, "--out", str(tmp_path)]) == 0
    _, rows = read_csv(tmp_path / "train_speed_cuda.csv")
    assert len(rows) == 4 and all(r["status"] == "ok" and float(r["peak_mem_mb"]) > 0 for r in rows)
    report = (tmp_path / "train_speed_cuda.md").read_text()
    assert "`trainer.precision` (`bf16-mixed`)" in report and "max_memory_allocated" in report
    assert "comparison only" not in report
