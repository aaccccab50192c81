"""A training step on CUDA never waits on the host (skipped without a GPU).

``torch.cuda.set_sync_debug_mode("error")`` turns every operation that synchronises the device
with the host (``.item()``, ``.cpu()``, a blocking copy, a data-dependent shape) into an error;
it is switched on only inside the training steps after the first, so start-up work and
evaluations do not count.
"""

from __future__ import annotations

import lightning as L
import pytest
import torch
from conftest import compose_config, smoke_overrides

from lra.job.train import run

pytestmark = pytest.mark.cuda


class ErrorOnSync(L.Callback):
    """Synchronisations raise inside training steps ``from_step`` and later; ``CHECKED`` counts those
    steps (the harness builds this callback from the config, so the count lives on the class)."""

    CHECKED: list[int] = []

    def __init__(self, from_step: int = 1) -> None:
        self.from_step = from_step

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        if trainer.global_step >= self.from_step:
            torch.cuda.set_sync_debug_mode("error")

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if torch.cuda.get_sync_debug_mode():
            self.CHECKED.append(trainer.global_step)
        torch.cuda.set_sync_debug_mode(0)


@pytest.mark.parametrize("attention", ["standard", "nystrom", "skyformer", "performer"])
def test_training_steps_do_not_synchronise_the_gpu(data_root, tmp_path, attention):
    ErrorOnSync.CHECKED.clear()
    cfg = compose_config(
        smoke_overrides(
            data_root,
            "listops",
            attention,
            "trainer.accelerator=gpu",
            "trainer.precision=bf16-mixed",
            "trainer.max_steps=6",
            "trainer.log_every_n_steps=1000",  # the loss is read back, and the NaN guard runs, every 1000
            "task.eval_every=6",
            "+callbacks.sync._target_=test_cuda_training.ErrorOnSync",
        )
    )
    summary = run(cfg, tmp_path)
    torch.cuda.set_sync_debug_mode(0)
    assert summary["status"] == "completed", summary["error"]  # a synchronisation fails the run
    assert ErrorOnSync.CHECKED == [2, 3, 4, 5, 6]  # global_step after each checked step
