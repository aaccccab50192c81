"""Callbacks of every run: the perf/* metrics (docs/design.md § Training) and validation at the last step."""

from __future__ import annotations

import statistics
import time
from typing import Any

import lightning as L
import torch
from lightning.pytorch.callbacks import Callback

from lra.memory import peak_rss_mb, reset_peak_rss


class EfficiencyMonitor(Callback):
    """Logs ``perf/*`` and ``model/params`` at the end of training; ``metrics`` keeps them for summary.json.

    - ``perf/step_ms``: median wall time of a training step (forward, backward, optimizer), with
      the GPU synchronised before and after;
    - ``perf/samples_per_s``: examples per second at that median step (all processes together);
    - ``perf/train_time_s``: wall time from the start to the end of training, validations included,
      summed over the segments of a resumed run (the time so far travels in the checkpoint);
    - ``perf/peak_gpu_mem_mb`` (``torch.cuda.max_memory_allocated``) on a GPU, else
      ``perf/peak_rss_mb`` (peak resident memory of the process during training);
    - ``model/params``: number of parameters.
    """

    def __init__(self) -> None:
        self.step_seconds: list[float] = []
        self.samples_per_step = 0
        self.metrics: dict[str, float] = {}
        self.on_cuda = False
        self.train_start = 0.0
        self.step_start = 0.0
        self.earlier_train_time = 0.0  # seconds trained before the checkpoint this run resumed from

    def synchronize(self) -> None:
        if self.on_cuda:
            torch.cuda.synchronize()

    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.on_cuda = pl_module.device.type == "cuda"
        if self.on_cuda:
            torch.cuda.reset_peak_memory_stats(pl_module.device)
        else:
            reset_peak_rss()
        self.metrics["model/params"] = sum(p.numel() for p in pl_module.parameters())
        self.train_start = time.perf_counter()

    def on_train_batch_start(
        self, trainer: L.Trainer, pl_module: L.LightningModule, batch, batch_idx: int
    ) -> None:
        self.synchronize()
        self.step_start = time.perf_counter()

    def on_train_batch_end(
        self, trainer: L.Trainer, pl_module: L.LightningModule, outputs, batch, batch_idx: int
    ) -> None:
        self.synchronize()
        self.step_seconds.append(time.perf_counter() - self.step_start)
        self.samples_per_step = len(batch[-1])

    def on_train_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.synchronize()
        self.metrics["perf/train_time_s"] = self.train_time_s()
        if self.step_seconds:
            step = statistics.median(self.step_seconds)
            self.metrics["perf/step_ms"] = 1000 * step
            self.metrics["perf/samples_per_s"] = self.samples_per_step * trainer.world_size / step
        if self.on_cuda:
            self.metrics["perf/peak_gpu_mem_mb"] = torch.cuda.max_memory_allocated(pl_module.device) / 2**20
        else:
            self.metrics["perf/peak_rss_mb"] = peak_rss_mb()
        for logger in trainer.loggers:
            logger.log_metrics(self.metrics, step=trainer.global_step)

    def train_time_s(self) -> float:
        return self.earlier_train_time + time.perf_counter() - self.train_start

    def state_dict(self) -> dict[str, Any]:
        return {"train_time_s": self.train_time_s() if self.train_start else 0.0}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.earlier_train_time = state_dict["train_time_s"]


class ValidateAtLastStep(Callback):
    """Stop at ``max_steps`` through ``trainer.should_stop`` so that Lightning validates the final weights
    even when ``max_steps`` is not a multiple of the validation interval."""

    def on_train_batch_end(
        self, trainer: L.Trainer, pl_module: L.LightningModule, outputs, batch, batch_idx: int
    ) -> None:
        if trainer.max_steps > 0 and trainer.global_step >= trainer.max_steps:
            trainer.should_stop = True
