"""Callbacks of every run: the perf/* metrics (docs/design.md § Training), the best checkpoint within
the selection window, and validation at the last step."""

from __future__ import annotations

import statistics
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import lightning as L
import torch
from lightning.pytorch.callbacks import Callback, ModelCheckpoint

from lra.job.memory import peak_rss_mb, reset_peak_rss


class StepTimer:
    """Wall time of each training step without waiting on the device.

    On a GPU each step is bracketed by two CUDA events recorded in the stream (``event_type``
    builds them: ``torch.cuda.Event`` with timing); ``drain`` moves the times of the steps whose
    events have completed (``query``) into ``seconds`` and keeps only the rest pending, so timing
    never stalls the queue and the pending events stay few. On the CPU, where work is synchronous,
    it is ``time.perf_counter``.
    """

    def __init__(self, on_cuda: bool, event_type: Callable[..., Any] | None = None) -> None:
        self.on_cuda = on_cuda
        self.event_type = event_type or torch.cuda.Event
        self.pending: deque[tuple[Any, Any]] = deque()  # (begin, end) events, oldest first
        self.seconds: list[float] = []
        self.started = 0.0

    def start(self) -> None:
        if self.on_cuda:
            begin = self.event_type(enable_timing=True)
            begin.record()
            self.pending.append((begin, self.event_type(enable_timing=True)))
        else:
            self.started = time.perf_counter()

    def stop(self) -> None:
        if self.on_cuda:
            self.pending[-1][1].record()
        else:
            self.seconds.append(time.perf_counter() - self.started)

    def drain(self) -> None:
        """Read the times of the steps whose events have completed, oldest first, without waiting."""
        while self.pending and self.pending[0][1].query():
            begin, end = self.pending.popleft()
            self.seconds.append(begin.elapsed_time(end) / 1000)

    def all_seconds(self) -> list[float]:
        """Every step's seconds so far (on a GPU this waits for the last recorded step to finish)."""
        if self.pending:
            self.pending[-1][1].synchronize()
            self.drain()
        return self.seconds


MIXER = "attention"  # the encoder blocks' token mixer: its projections and its core (lra.model.EncoderBlock)


def parameter_counts(module: torch.nn.Module) -> dict[str, int]:
    """``model/params``: every parameter of ``module``; ``model/mixer_params``: those of its encoder
    blocks' ``attention`` submodules, the share the attention choice decides (tied layers once)."""
    mixers = {
        id(parameter): parameter.numel()
        for name, submodule in module.named_modules()
        if name.rpartition(".")[2] == MIXER
        for parameter in submodule.parameters()
    }
    return {
        "model/params": sum(p.numel() for p in module.parameters()),
        "model/mixer_params": sum(mixers.values()),
    }


class EfficiencyMonitor(Callback):
    """Logs ``perf/*`` and ``model/*`` at the end of training; ``metrics`` keeps them for summary.json.

    - ``perf/step_ms``: median time of a training step (forward, backward, optimizer); on a GPU
      measured with CUDA events, so no step waits for the device (``StepTimer``);
    - ``perf/samples_per_s``: examples per second at that median step (all processes together);
    - ``perf/train_time_s``: wall time from the start to the end of training, validations included,
      summed over the segments of a resumed run (the time so far travels in the checkpoint);
    - ``perf/peak_gpu_mem_mb`` (``torch.cuda.max_memory_allocated``) on a GPU, else
      ``perf/peak_rss_mb`` (peak resident memory of the process during training);
    - ``model/params`` and ``model/mixer_params``: the number of parameters, and of those the
      attention's (``parameter_counts``);
    - ``perf/elapsed_s`` at each validation: the training time so far, validations included (the
      x axis of the report's validation curves, Skyformer Figure 2).

    The pretraining stage's monitor (``lra.job.pretrain_stage``) logs that time as ``elapsed_key``
    (``pretrain/elapsed_s``) and keeps the rest in ``metrics`` only (``log_final=False``).
    """

    def __init__(self, elapsed_key: str = "perf/elapsed_s", log_final: bool = True) -> None:
        self.elapsed_key = elapsed_key
        self.log_final = log_final
        self.timer = StepTimer(on_cuda=False)
        self.samples_per_step = 0
        self.metrics: dict[str, float] = {}
        self.on_cuda = False
        self.train_start = 0.0
        self.earlier_train_time = 0.0  # seconds trained before the checkpoint this run resumed from

    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.on_cuda = pl_module.device.type == "cuda"
        self.timer = StepTimer(self.on_cuda)
        if self.on_cuda:
            torch.cuda.reset_peak_memory_stats(pl_module.device)
        else:
            reset_peak_rss()
        self.metrics |= parameter_counts(pl_module)
        self.train_start = time.perf_counter()

    def on_train_batch_start(
        self, trainer: L.Trainer, pl_module: L.LightningModule, batch, batch_idx: int
    ) -> None:
        self.timer.start()

    def on_train_batch_end(
        self, trainer: L.Trainer, pl_module: L.LightningModule, outputs, batch, batch_idx: int
    ) -> None:
        self.timer.stop()
        self.samples_per_step = len(batch[-1])
        if trainer.global_step % trainer.log_every_n_steps == 0:
            self.timer.drain()

    def on_validation_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if not trainer.sanity_checking and self.train_start:
            pl_module.log(self.elapsed_key, self.train_time_s())

    def on_train_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        step_seconds = self.timer.all_seconds()
        self.metrics["perf/train_time_s"] = self.train_time_s()
        if step_seconds:
            step = statistics.median(step_seconds)
            self.metrics["perf/step_ms"] = 1000 * step
            self.metrics["perf/samples_per_s"] = self.samples_per_step * trainer.world_size / step
        if self.on_cuda:
            self.metrics["perf/peak_gpu_mem_mb"] = torch.cuda.max_memory_allocated(pl_module.device) / 2**20
        else:
            self.metrics["perf/peak_rss_mb"] = peak_rss_mb()
        for logger in trainer.loggers if self.log_final else ():
            logger.log_metrics(self.metrics, step=trainer.global_step)

    def train_time_s(self) -> float:
        if self.on_cuda:
            torch.cuda.synchronize()
        return self.earlier_train_time + time.perf_counter() - self.train_start

    def state_dict(self) -> dict[str, Any]:
        return {"train_time_s": self.train_time_s() if self.train_start else 0.0}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.earlier_train_time = state_dict["train_time_s"]


class BestCheckpointInWindow(ModelCheckpoint):
    """A ``ModelCheckpoint`` of the best monitored value among the evaluations in the module's
    selection window (``LRALitModule.in_selection_window``: the Skyformer authors keep the best dev
    checkpoint only after 20% of the steps); the evaluations before it save nothing."""

    def on_validation_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if pl_module.in_selection_window:
            super().on_validation_end(trainer, pl_module)


class ValidateAtLastStep(Callback):
    """Stop at ``max_steps`` through ``trainer.should_stop`` so that Lightning validates the final weights
    even when ``max_steps`` is not a multiple of the validation interval."""

    def on_train_batch_end(
        self, trainer: L.Trainer, pl_module: L.LightningModule, outputs, batch, batch_idx: int
    ) -> None:
        if trainer.max_steps > 0 and trainer.global_step >= trainer.max_steps:
            trainer.should_stop = True
