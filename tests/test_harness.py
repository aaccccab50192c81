"""The harness end to end, in-process: every task × attention runs, metrics and summary.json, failures.

Each run composes the real configs through Hydra's compose API and trains on the tiny prepared
sets of ``conftest.py`` with ``trainer=smoke``.
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
import torch
from conftest import EASY_SEQ_LEN, EASY_VOCAB, TASKS, compose_config, smoke_overrides, task_attention_product
from torch import nn

import attention_zoo
from attention_zoo import registry
from data_prep.recipes import RECIPES, Build, Recipe
from lra.job.callbacks import StepTimer
from lra.job.train import run
from lra.results.summary_json import SCHEMA

PERF_KEYS = ("perf/step_ms", "perf/samples_per_s", "perf/train_time_s", "perf/peak_rss_mb", "model/params")


def run_job(
    data_root: Path, out: Path, task: str = "listops", attention: str = "standard", *extra: str
) -> dict:
    return run(compose_config(smoke_overrides(data_root, task, attention, *extra)), out)


def read_csv_metrics(out: Path) -> dict[str, list[str]]:
    """Column -> its non-empty values in csv/metrics.csv."""
    with open(out / "csv" / "metrics.csv") as handle:
        rows = list(csv.DictReader(handle))
    return {key: [row[key] for row in rows if row[key]] for key in rows[0]}


@pytest.mark.parametrize(("task", "attention"), task_attention_product(TASKS, attention_zoo.available()))
def test_every_task_and_attention_runs(data_root, tmp_path, task, attention):
    summary = run_job(data_root, tmp_path, task, attention)
    assert summary["status"] == "completed", summary["error"]
    metrics = summary["metrics"]
    for key in ("val/acc_best", "test/acc", "test/loss", *PERF_KEYS):
        assert metrics[key] is not None, key
    assert metrics["train/steps"] == 2
    assert json.loads((tmp_path / "summary.json").read_text())["metrics"] == metrics


def test_summary_json_schema(data_root, tmp_path):
    summary = run_job(data_root, tmp_path, "retrieval", "nystrom", "seed=3")
    on_disk = json.loads((tmp_path / "summary.json").read_text())
    assert on_disk == summary
    assert (summary["task"], summary["attention"], summary["seed"], summary["status"], summary["error"]) == (
        "retrieval",
        "nystrom",
        3,
        "completed",
        None,
    )
    assert summary["config"]["attention"]["num_landmarks"] == 8  # resolved: features=8
    assert summary["config"]["task"]["dual"] is True
    assert {"python", "torch", "lightning", "lra"} <= set(summary["versions"])
    assert summary["device"] == "cpu"
    assert summary["git_commit"] is None or len(summary["git_commit"]) >= 40
    assert summary["started"] <= summary["finished"]
    assert summary["output_dir"] == str(tmp_path.resolve())
    assert 0 <= summary["metrics"]["test/acc"] <= 1 and summary["metrics"]["model/params"] > 1000
    assert 0 < summary["metrics"]["model/mixer_params"] < summary["metrics"]["model/params"]
    assert summary["preset"] is None  # no experiment= preset
    assert (tmp_path / "checkpoints" / "best.ckpt").is_file()
    assert summary["schema"] == SCHEMA == 3
    assert summary["pretrain"] is None  # trained from scratch
    assert 0 <= summary["metrics"]["test/acc_final"] <= 1  # the final weights, one more test pass
    shares = summary["data"]["majority_share"]
    assert set(shares) == {"train", "val", "test"} and all(0 < share <= 1 for share in shares.values())


def test_csv_logger_writes_every_metric(data_root, tmp_path):
    run_job(data_root, tmp_path, "listops", "standard", "trainer.max_steps=3", "task.eval_every=2")
    columns = read_csv_metrics(tmp_path)
    for key in (
        "train/loss",
        "train/acc",
        "val/loss",
        "val/acc",
        "val/acc_best",
        "test/loss",
        "test/acc",
        "test/acc_final",
        *PERF_KEYS,
    ):
        assert columns.get(key), key
    assert len(columns["val/acc"]) == 2  # at step 2 (eval_every) and at the last step (3)
    assert (tmp_path / "csv" / "hparams.yaml").read_text().count("num_landmarks") == 0  # standard has none


def test_wandb_offline_writes_a_run_folder(data_root, tmp_path, monkeypatch):
    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.setenv("WANDB_SILENT", "true")
    summary = run_job(data_root, tmp_path, "listops", "standard", "logger=wandb", "seed=5")
    assert summary["status"] == "completed", summary["error"]
    runs = list((tmp_path / "wandb").glob("offline-run-*"))
    assert len(runs) == 1
    (records,) = runs[0].glob("run-*.wandb")
    content = records.read_bytes()  # the run's records, what `wandb sync` uploads
    for expected in ("listops-standard-s5", "num_workers", "val/acc_best", "test/acc", "perf/step_ms"):
        assert expected.encode() in content, expected
    import wandb

    assert wandb.run is None  # finished after the job


@pytest.mark.slow  # 200 training steps
def test_loop_learns_an_easy_task(data_root, tmp_path):
    """2 classes, balanced: the accuracy after a short run must clearly beat the majority class."""
    summary = run_job(
        data_root,
        tmp_path,
        "listops",
        "nystrom",
        "task.dataset=easy",
        f"task.seq_len={EASY_SEQ_LEN}",
        f"task.vocab_size={EASY_VOCAB}",
        "task.num_classes=2",
        "task.batch_size=32",
        "task.lr=3e-3",
        "task.warmup_steps=10",
        "task.eval_every=100",
        "trainer.max_steps=200",
        "trainer.limit_val_batches=1.0",
        "trainer.limit_test_batches=1.0",
    )
    assert summary["status"] == "completed", summary["error"]
    assert summary["metrics"]["test/acc"] >= 0.8, summary["metrics"]


# the test cores below take no options: drop the standard core's attention_dropout
NO_OPTIONS = ("~attention.attention_dropout",)


class NaNAttention(nn.Module):
    """A core whose output is NaN: the run must stop with status ``nan``."""

    def __init__(self, *, head_dim: int, num_heads: int, seq_len: int) -> None:
        super().__init__()

    def forward(self, q, k, v, mask=None):
        return q * torch.nan


def test_nan_loss_stops_the_run(data_root, tmp_path, monkeypatch):
    monkeypatch.setitem(
        registry._REGISTRY, "nan-test", registry.AttentionSpec("nan-test", NaNAttention, {}, {}, None, None)
    )
    summary = run_job(data_root, tmp_path, "listops", "standard", "attention.name=nan-test", *NO_OPTIONS)
    assert summary["status"] == "nan"
    assert "step 0" in summary["error"] and "'nan-test'" in summary["error"]
    assert summary["metrics"]["train/steps"] == 0
    assert json.loads((tmp_path / "summary.json").read_text())["status"] == "nan"


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (
            "task.batch_size=41",
            "task.batch_size=41 is larger than the training split of 'listops' (40 examples)",
        ),
        ("task.seq_len=64", "task.seq_len=64 but the prepared set 'listops' has seq_len=32"),
        ("task.vocab_size=17", "task.vocab_size=17 but the prepared set 'listops' has vocab_size=16"),
        ("task.dual=true", "task.dual=True but the prepared set 'listops' holds one sequence per example"),
        ("attention.num_landmarks=33", "attention.num_landmarks=33 exceeds task.seq_len=32"),
    ],
)
def test_bad_config_fails_before_training(data_root, tmp_path, override, message):
    summary = run_job(data_root, tmp_path, "listops", "nystrom", override)
    assert summary["status"] == "failed"
    assert message in summary["error"] and "\n" not in summary["error"]
    assert summary["metrics"]["train/steps"] is None
    assert not (tmp_path / "checkpoints").exists()


def test_a_set_of_another_length_names_the_command_that_prepares_it_at_the_tasks(data_root, tmp_path):
    root = tmp_path / "data"
    shutil.copytree(data_root / "listops", root / "listops")
    meta = json.loads((root / "listops" / "meta.json").read_text())
    meta["command"] = f"python -m data_prep listops --root {root} --seq-len 32"
    (root / "listops" / "meta.json").write_text(json.dumps(meta))
    summary = run_job(root, tmp_path / "out", "listops", "standard", "task.seq_len=64")
    again = f"or prepare the set again: python -m data_prep listops --root {root} --seq-len 64"
    assert again in summary["error"]


def test_missing_download_names_the_prepare_command(tmp_path):
    # a run outside debug=fdr (which would train on a stand-in instead: tests/test_data_small_sets.py)
    summary = run_job(tmp_path / "empty", tmp_path / "out", "text", "standard", "debug_data_size=null")
    assert summary["status"] == "failed"
    assert (
        "no prepared data set 'text'" in summary["error"] and "python -m data_prep text" in summary["error"]
    )


def test_missing_listops_is_generated(tmp_path, monkeypatch):
    """A fresh clone: the recipe of the task's dataset builds the missing set with data_prep's generator
    (its release build does not apply: no release is unpacked)."""
    sizes = (
        "--num-train",
        "40",
        "--num-val",
        "8",
        "--num-test",
        "8",
        "--min-length",
        "5",
        "--max-length",
        "33",
    )
    recipe = Recipe(
        (
            Build(
                "listops-tiny-release", ("listops", "--source", "{root}/lra_release"), source="lra_release"
            ),
            Build("listops-tiny", ("listops", "--name", "listops-tiny", *sizes, "--seq-len", "32")),
        )
    )
    monkeypatch.setitem(RECIPES, "listops-tiny", recipe)
    dataset = ("task.dataset=listops-tiny", "debug_data_size=null")  # not debug=fdr's small set
    summary = run_job(tmp_path / "data", tmp_path / "out", "listops", "standard", *dataset)
    assert summary["status"] == "completed", summary["error"]
    meta = json.loads((tmp_path / "data" / "listops-tiny" / "meta.json").read_text())
    assert (meta["counts"], meta["seq_len"]) == ({"train": 40, "val": 8, "test": 8}, 32)
    assert summary["data"]["set"] == "listops-tiny" and summary["data"]["source"] == "generator"


def test_val_from_test_validates_on_the_test_split(data_root, tmp_path):
    summary = run_job(
        data_root, tmp_path, "text", "standard", "task.val_from_test=true", "trainer.limit_val_batches=1.0"
    )
    assert summary["status"] == "completed", summary["error"]
    assert summary["config"]["task"]["val_from_test"] is True


def test_unexpected_error_keeps_its_traceback(data_root, tmp_path, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("core exploded")

    monkeypatch.setattr(NaNAttention, "forward", broken)
    monkeypatch.setitem(
        registry._REGISTRY, "broken", registry.AttentionSpec("broken", NaNAttention, {}, {}, None, None)
    )
    summary = run_job(data_root, tmp_path, "listops", "standard", "attention.name=broken", *NO_OPTIONS)
    assert summary["status"] == "failed" and summary["error"].startswith("RuntimeError: core exploded")
    assert "core exploded" in (tmp_path / "traceback.txt").read_text()


def test_compile_wraps_the_encoder(data_root):
    from helpers.records import model_of

    cfg = compose_config(smoke_overrides(data_root, "listops", "standard", "model.compile=true"))
    assert type(model_of(cfg).encoder).__name__ == "OptimizedModule"


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda path: path.write_bytes(path.read_bytes()[:-5]), "truncated"),
        (
            lambda path: path.write_bytes(path.read_bytes()[:-1] + b"\x03"),
            "does not match its recorded SHA-256",
        ),
    ],
)
def test_damaged_prepared_data_fails_before_training_with_the_rebuild_command(
    data_root, tmp_path, damage, message
):
    root = tmp_path / "data"
    shutil.copytree(data_root / "listops", root / "listops")
    damage(root / "listops" / "train.tokens.npy")
    summary = run_job(root, tmp_path / "out", "listops", "standard")
    assert summary["status"] == "failed" and "\n" not in summary["error"]
    assert message in summary["error"] and "tests/conftest.py" in summary["error"]  # the set's command
    assert summary["metrics"]["train/steps"] is None and not (tmp_path / "out" / "checkpoints").exists()


class FakeCudaEvent:
    """Stands in for ``torch.cuda.Event``: recorded at a clock that ticks 1 ms a call, ``done`` when
    the (imaginary) device has reached it."""

    clock_ms = 0.0

    def __init__(self, enable_timing: bool) -> None:
        self.at_ms = 0.0
        self.done = False

    def record(self) -> None:
        FakeCudaEvent.clock_ms += 1
        self.at_ms = FakeCudaEvent.clock_ms

    def query(self) -> bool:
        return self.done

    def synchronize(self) -> None:
        self.done = True

    def elapsed_time(self, end: FakeCudaEvent) -> float:
        return end.at_ms - self.at_ms


def test_step_timer_reads_completed_steps_at_once_and_keeps_only_the_rest_pending():
    timer = StepTimer(on_cuda=True, event_type=FakeCudaEvent)
    for _ in range(3):
        timer.start()
        timer.stop()
    for begin, end in list(timer.pending)[:2]:  # the device has finished the first two steps
        begin.done = end.done = True
    timer.drain()
    assert timer.seconds == [0.001, 0.001] and len(timer.pending) == 1
    assert timer.all_seconds() == [0.001] * 3 and not timer.pending  # waits for the last step


@pytest.mark.parametrize(("setting", "calls"), [("true", 1), ("false", 0)])
def test_steady_heap_sets_up_the_c_heap_before_training(data_root, tmp_path, monkeypatch, setting, calls):
    made = []
    monkeypatch.setattr("lra.job.train.keep_freed_heap", lambda: made.append(True) or True)
    summary = run_job(data_root, tmp_path, "listops", "standard", f"steady_heap={setting}")
    assert summary["status"] == "completed" and len(made) == calls
