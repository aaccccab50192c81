"""``trainer.accumulate_grad_batches``: N batches of B/N train as one batch of B: the same optimizer
steps, learning rates, evaluations, examples per step and (without dropout) weights."""

from __future__ import annotations

from pathlib import Path

import lightning as L
import pytest
import torch
from conftest import compose_config, smoke_overrides

from lra.job.resolve import job_records
from lra.job.train import build_datamodule, build_model, build_module, build_trainer

STEPS = 5  # optimizer steps: the tiny set's 40 examples hold 2 batches of 16, so 2.5 epochs
EVAL_EVERY = 2


class StepRecorder(L.Callback):
    """Each optimizer step's learning rate and examples, and the steps that were evaluated."""

    def __init__(self) -> None:
        self.rates: list[float] = []
        self.examples: list[int] = []
        self.pending = 0
        self.evaluated: list[int] = []
        self.last_step = 0

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        self.pending += len(batch[-1])
        if trainer.global_step > self.last_step:  # this batch ended an optimizer step
            self.last_step = trainer.global_step
            self.examples.append(self.pending)
            self.rates.append(trainer.optimizers[0].param_groups[0]["lr"])
            self.pending = 0

    def on_validation_epoch_end(self, trainer, pl_module) -> None:
        if not trainer.sanity_checking:
            self.evaluated.append(trainer.global_step)


def fit(data_root: Path, out: Path, batch_size: int, accumulate: int) -> tuple[StepRecorder, dict]:
    """A short run of ``STEPS`` optimizer steps in batches of ``batch_size``, ``accumulate`` per step."""
    overrides = smoke_overrides(
        data_root,
        "listops",
        "standard",
        f"task.batch_size={batch_size}",
        f"trainer.accumulate_grad_batches={accumulate}",
        f"trainer.max_steps={STEPS}",
        f"task.eval_every={EVAL_EVERY}",
        "task.warmup_steps=2",
        "model.dropout=0",
        "trainer.num_sanity_val_steps=0",
    )
    records = job_records(compose_config(overrides))
    L.seed_everything(records.run.seed, verbose=False)
    module = build_module(records.optim, build_model(records.model))
    parts = build_trainer(records.trainer, out, [])
    recorder = StepRecorder()
    parts.trainer.callbacks.append(recorder)
    parts.trainer.fit(module, datamodule=build_datamodule(records.data))
    assert parts.trainer.global_step == STEPS
    return recorder, {name: value.detach().clone() for name, value in module.state_dict().items()}


def test_accumulated_batches_train_as_the_whole_batch(data_root, tmp_path):
    whole, whole_weights = fit(data_root, tmp_path / "whole", 16, 1)
    split, split_weights = fit(data_root, tmp_path / "split", 4, 4)
    assert whole.examples == split.examples == [16] * STEPS  # the epoch's last 8 examples: no step
    assert split.rates == pytest.approx(whole.rates, rel=1e-12)
    assert len(set(whole.rates)) > 2  # the schedule moved: warm-up, then decay over optimizer steps
    assert whole.evaluated == split.evaluated == [2, 4, 5]  # every eval_every optimizer steps, and last
    for name, value in whole_weights.items():
        torch.testing.assert_close(split_weights[name], value, rtol=1e-4, atol=1e-5, msg=name)


def test_the_schedule_counts_optimizer_steps_not_batches(data_root, tmp_path):
    split, _ = fit(data_root, tmp_path / "split", 4, 4)
    micro, _ = fit(data_root, tmp_path / "micro", 4, 1)  # the same batches, one step each
    assert split.rates == pytest.approx(micro.rates, rel=1e-12)  # step s has the rate of step s
    assert micro.examples == [4] * STEPS


def test_a_batch_per_step_larger_than_the_training_split_is_one_line(data_root, tmp_path):
    from lra.config.errors import ConfigError

    with pytest.raises(ConfigError, match=r"task.batch_size=16 x trainer.accumulate_grad_batches=4"):
        fit(data_root, tmp_path / "big", 16, 4)
