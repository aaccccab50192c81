"""One configuration of the train-speed benchmark: ``python -m lra task=T attention=A OVERRIDES`` composed
(``TrainSpeedConfig``), one full training step of its module outside Lightning's fit loop on a random
batch of the task's shape (``HarnessStep``), timed into a ``TrainSpeedRow``.

A step runs as Lightning's automatic optimisation does: zero_grad, ``training_step`` under the autocast
of ``trainer.precision``, backward, the module's ``configure_gradient_clipping`` (settings from
``cfg.protocol``), ``optimizer.step()``, the step-interval schedulers. The optimizers come from
``configure_optimizers()`` parsed by the Trainer's own (private) parser; the module's trainer is a
never-fitted ``Trainer(barebones=True)``, under which ``self.log`` returns at once. Nothing is patched."""

from __future__ import annotations

import contextlib
import logging
import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import lightning as L
import torch
from hydra import compose, initialize_config_dir
from hydra.errors import HydraException
from lightning.pytorch.core.optimizer import _init_optimizers_and_lr_schedulers
from lightning.pytorch.utilities.types import LRSchedulerConfig
from omegaconf import DictConfig
from omegaconf.errors import OmegaConfBaseException

from lra.bench.measuring import Failure, Outcome, measure_step
from lra.config.paths import CONFIG_DIR
from lra.job.checks import check_config
from lra.job.memory import keep_freed_heap
from lra.job.resolve import job_records, trainer_record
from lra.job.train import build_model, build_module
from lra.job.trainers import AUTOCAST_DTYPES, clipping
from lra.results.published_costs import RUN_COST

Batch = tuple[torch.Tensor, torch.Tensor, torch.Tensor]  # tokens, lengths, labels
BAREBONES_LOG_WARNING = r".*self\.log\(\)` but `Trainer\(barebones=True\)` is configured.*"
PUBLISHED = {cost.attention: cost for cost in RUN_COST}


def job_config(task: str, attention: str, overrides: Sequence[str] = ()) -> DictConfig:
    """The composed config of ``python -m lra task=TASK attention=ATTENTION OVERRIDES`` (no logger)."""
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        return compose("config", ["logger=none", f"task={task}", f"attention={attention}", *overrides])


def random_batch(task: DictConfig, device: torch.device) -> Batch:
    """A batch of ``task``'s real shape, every position a real token: tokens (batch, seq_len) or, for a
    dual task, (batch, 2, seq_len), in [1, vocab_size); lengths (batch,) or (batch, 2); labels (batch,),
    or (batch, seq_len) for a recall task's token head (a label at every position)."""
    shape = (task.batch_size, 2) if task.dual else (task.batch_size,)
    tokens = torch.randint(1, task.vocab_size, (*shape, task.seq_len), device=device)
    lengths = torch.full(shape, task.seq_len, device=device)
    labelled = (task.batch_size, task.seq_len) if task.get("generator") else (task.batch_size,)
    labels = torch.randint(0, task.num_classes, labelled, device=device)
    return tokens, lengths, labels


def barebones_trainer(cfg: DictConfig, device: torch.device) -> L.Trainer:
    """A never-fitted ``Trainer(barebones=True)`` on ``device`` with the config's steps and clipping,
    without its start-up notes (the barebones feature list, the devices found)."""
    lightning_logger = logging.getLogger("lightning.pytorch")
    level = lightning_logger.level
    lightning_logger.setLevel(logging.WARNING)
    try:
        trainer = trainer_record(cfg, cfg.trainer.max_steps)
        devices = [device.index or 0] if device.type == "cuda" else 1
        run = {"max_steps": trainer.max_steps, **clipping(trainer)}
        return L.Trainer(barebones=True, accelerator=device.type, devices=devices, **run)
    finally:
        lightning_logger.setLevel(level)


def precision(cfg: DictConfig, device: torch.device) -> contextlib.AbstractContextManager:
    """The autocast of ``cfg.trainer.precision`` on ``device``, as Lightning's mixed precision applies it
    (with 16-mixed Lightning also scales the loss; its scaler's cost is not in the step here)."""
    setting = str(cfg.trainer.precision)
    if setting not in AUTOCAST_DTYPES:
        raise ValueError(
            f"trainer.precision={setting!r} is not measured here; valid: {', '.join(AUTOCAST_DTYPES)}"
        )
    dtype = AUTOCAST_DTYPES[setting]
    return contextlib.nullcontext() if dtype is None else torch.autocast(device.type, dtype=dtype)


@dataclass
class HarnessStep:
    """A full training step of a harness module on a fixed batch: ``HarnessStep.build(cfg, device)()``;
    ``autocast()``: the context of ``precision(cfg, device)``; ``steps_done``: the next ``batch_idx``."""

    module: L.LightningModule
    trainer: L.Trainer
    optimizer: torch.optim.Optimizer
    schedulers: list[LRSchedulerConfig]
    batch: Batch
    autocast: Callable[[], contextlib.AbstractContextManager]
    steps_done: int = 0

    @classmethod
    def build(cls, cfg: DictConfig, device: torch.device) -> HarnessStep:
        """The module of ``cfg`` on ``device`` (seeded by ``cfg.seed``), its optimizer, a random batch."""
        torch.manual_seed(cfg.seed)
        records = job_records(cfg)
        module = build_module(records.optim, build_model(records.model)).to(device).train()
        module.trainer = trainer = barebones_trainer(cfg, device)
        [optimizer], schedulers = _init_optimizers_and_lr_schedulers(module)
        batch = random_batch(cfg.task, device)
        return cls(module, trainer, optimizer, schedulers, batch, partial(precision, cfg, device))

    def __call__(self) -> None:
        self.optimizer.zero_grad()
        with self.autocast(), warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=BAREBONES_LOG_WARNING)  # self.log does nothing here
            loss = self.module.training_step(self.batch, self.steps_done)
        loss.backward()
        self.module.configure_gradient_clipping(
            self.optimizer, self.trainer.gradient_clip_val, self.trainer.gradient_clip_algorithm
        )
        self.optimizer.step()
        self.steps_done += 1
        for scheduler in self.schedulers:
            due = scheduler.interval == "step" and self.steps_done % scheduler.frequency == 0
            if due and not scheduler.reduce_on_plateau:  # a plateau scheduler needs a monitored metric
                scheduler.scheduler.step()


def paper_hours(attention: str, task: str) -> float | None:
    """Skyformer Table 2's hours for a whole 50k-step run on one V100, where it has the pair."""
    cost = PUBLISHED.get(attention)
    return None if cost is None else cost.hours.get(task)


@dataclass(frozen=True)
class TrainSpeedRow:
    """One CSV row; ``run_steps`` is the config's ``trainer.max_steps``, the run the projection is for."""

    task: str
    attention: str
    batch: int
    seq_len: int
    documents: int
    run_steps: int
    step_ms: float | None
    peak_mem_mb: float | None
    status: str
    detail: str = ""
    timed_steps: int = 0
    load_1min: float | None = None  # the machine's load average when the measurement started
    precision: str = ""  # the config's trainer.precision, which the step ran under

    @property
    def samples_per_s(self) -> float | None:
        """Examples (pairs of documents for retrieval) per second at the median step."""
        return None if self.step_ms is None else 1000 * self.batch / self.step_ms

    @property
    def projected_hours(self) -> float | None:
        """The median step × ``run_steps``, in hours (training steps only: no evaluation, no data loading)."""
        return None if self.step_ms is None else self.step_ms * self.run_steps / 3_600_000

    @property
    def paper_hours(self) -> float | None:
        """Skyformer Table 2's hours for this task × attention (whole run, one V100), where it has them."""
        return paper_hours(self.attention, self.task)

    @property
    def paper_peak_gb(self) -> float | None:
        cost = PUBLISHED.get(self.attention)
        return None if cost is None or cost.peak_gb is None else cost.peak_gb.get(self.task)


@dataclass(frozen=True)
class TrainSpeedConfig:
    """One measured configuration: ``python -m lra task=TASK attention=ATTENTION OVERRIDES``, timed."""

    task: str
    attention: str
    overrides: tuple[str, ...] = ()
    device: str = "cpu"
    warmup: int = 1
    steps: int = 3

    def compose(self) -> DictConfig:
        """``job_config`` of a run on ``device``: the trainer's accelerator is the device's (``cpu`` or
        ``gpu``, so that its default precision is the one such a run gets) unless an override sets it."""
        accelerator = "gpu" if torch.device(self.device).type == "cuda" else "cpu"
        return job_config(self.task, self.attention, [f"trainer.accelerator={accelerator}", *self.overrides])

    def compose_checked(self) -> DictConfig:
        """``compose`` after the harness's own checks; a ``ValueError`` says what is wrong."""
        try:
            cfg = self.compose()
        except (HydraException, OmegaConfBaseException) as error:
            message = str(error).split("\nConfig search path")[0]  # Hydra appends its search path
            raise ValueError(f"task={self.task} attention={self.attention}: {message}") from None
        check_config(cfg)  # a ConfigError (a ValueError) naming the key
        precision(cfg, torch.device(self.device))  # a ValueError for a precision not measured here
        return cfg


def row_for(config: TrainSpeedConfig, cfg: DictConfig, result: Outcome, load_1min: float) -> TrainSpeedRow:
    """The row of ``config`` (its shape from the composed ``cfg``) with ``result``'s figures or failure."""
    documents = 2 if cfg.task.dual else 1  # retrieval's pairs
    return TrainSpeedRow(
        config.task, config.attention, cfg.task.batch_size, cfg.task.seq_len, documents,
        cfg.trainer.max_steps, result.median_ms, result.peak_mb, result.status, result.detail,
        result.timed_steps, load_1min, str(cfg.trainer.precision),
    )  # fmt: skip


def measure(config: TrainSpeedConfig) -> TrainSpeedRow:
    """Build ``config``'s module, run ``warmup`` steps, then the median of ``steps`` timed ones."""
    load_1min = os.getloadavg()[0]
    device = torch.device(config.device)
    cfg = config.compose()
    if cfg.steady_heap:  # as the training job sets its process up
        keep_freed_heap()
    result = measure_step(partial(HarnessStep.build, cfg, device), device, config.warmup, config.steps)
    return row_for(config, cfg, result, load_1min)


def failed(config: TrainSpeedConfig, failure: Failure) -> TrainSpeedRow:
    """The row of a configuration whose subprocess gave no result; its load is the one at its end."""
    return row_for(config, config.compose(), failure, os.getloadavg()[0])


def format_progress(row: TrainSpeedRow) -> str:
    figures = (
        f"{row.step_ms:9.1f} ms/step {row.samples_per_s:8.1f} samples/s {row.projected_hours:8.2f} h "
        f"{row.peak_mem_mb:9.1f} MB ({row.timed_steps} timed)"
        if row.status == "ok"
        else f"{row.status.upper()} {row.detail}"
    )
    where = f"[{row.task:10}] {row.attention:10} batch={row.batch} n={row.seq_len}×{row.documents}"
    return f"{where}, load {row.load_1min:.1f}: {figures}"
