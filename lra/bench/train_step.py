"""One full training step of the harness, outside Lightning's fit loop, on a random batch of a task's shape.

``job_config(task, attention, overrides)`` composes the config of ``python -m lra task=T attention=A
OVERRIDES``; ``HarnessStep.build(cfg, device)`` builds its module with ``lra.train.build_module``, and
calling it runs one step as Lightning's automatic optimisation does: zero_grad, ``training_step`` under
the autocast of ``trainer.precision``, backward, the module's ``configure_gradient_clipping`` (settings
from ``cfg.protocol``), ``optimizer.step()``, the step-interval schedulers. The optimizers come from
``configure_optimizers()`` parsed by the Trainer's own (private) parser; the module's trainer is a
never-fitted ``Trainer(barebones=True)``, under which ``self.log`` returns at once. Nothing is patched.
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial

import lightning as L
import torch
from hydra import compose, initialize_config_dir
from lightning.pytorch.core.optimizer import _init_optimizers_and_lr_schedulers
from lightning.pytorch.utilities.types import LRSchedulerConfig
from omegaconf import DictConfig

from lra.paths import CONFIG_DIR
from lra.train import build_module, clipping

Batch = tuple[torch.Tensor, torch.Tensor, torch.Tensor]  # tokens, lengths, labels
BAREBONES_LOG_WARNING = r".*self\.log\(\)` but `Trainer\(barebones=True\)` is configured.*"


def job_config(task: str, attention: str, overrides: Sequence[str] = ()) -> DictConfig:
    """The composed config of ``python -m lra task=TASK attention=ATTENTION OVERRIDES`` (no logger)."""
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        return compose(
            config_name="config",
            overrides=["logger=none", f"task={task}", f"attention={attention}", *overrides],
        )


def documents(task: DictConfig) -> int:
    """Sequences per example: 2 for a dual task (retrieval), else 1."""
    return 2 if task.dual else 1


def random_batch(task: DictConfig, device: torch.device) -> Batch:
    """A batch of ``task``'s real shape, every position a real token.

    tokens: (batch, seq_len), or (batch, 2, seq_len) for a dual task, in [1, vocab_size);
    lengths: (batch,) or (batch, 2), all ``seq_len``; labels: (batch,) in [0, num_classes).
    """
    shape = (task.batch_size, 2) if task.dual else (task.batch_size,)
    tokens = torch.randint(1, task.vocab_size, (*shape, task.seq_len), device=device)
    lengths = torch.full(shape, task.seq_len, device=device)
    labels = torch.randint(0, task.num_classes, (task.batch_size,), device=device)
    return tokens, lengths, labels


def barebones_trainer(cfg: DictConfig, device: torch.device) -> L.Trainer:
    """A never-fitted ``Trainer(barebones=True)`` on ``device`` with the config's steps and clipping.

    Its start-up notes (the barebones feature list, the devices found) are not printed.
    """
    lightning_logger = logging.getLogger("lightning.pytorch")
    level = lightning_logger.level
    lightning_logger.setLevel(logging.WARNING)
    try:
        return L.Trainer(
            barebones=True,
            accelerator=device.type,
            devices=[device.index or 0] if device.type == "cuda" else 1,
            max_steps=cfg.trainer.max_steps,
            **clipping(cfg.protocol),
        )
    finally:
        lightning_logger.setLevel(level)


# the Trainer's precision -> the autocast dtype of the training step (None: 32-bit, no autocast)
AUTOCAST_DTYPES: dict[str, torch.dtype | None] = {
    "32-true": None,
    "32": None,
    "bf16-mixed": torch.bfloat16,
    "16-mixed": torch.float16,  # Lightning also scales the loss; its scaler's cost is not in the step here
}


def precision(cfg: DictConfig, device: torch.device) -> contextlib.AbstractContextManager:
    """The autocast of ``cfg.trainer.precision`` on ``device``, as Lightning's mixed precision applies it."""
    setting = str(cfg.trainer.precision)
    if setting not in AUTOCAST_DTYPES:
        raise ValueError(
            f"trainer.precision={setting!r} is not measured here; valid: {', '.join(AUTOCAST_DTYPES)}"
        )
    dtype = AUTOCAST_DTYPES[setting]
    return contextlib.nullcontext() if dtype is None else torch.autocast(device.type, dtype=dtype)


@contextlib.contextmanager
def barebones_logging() -> Iterator[None]:
    """Silence the warning that ``self.log`` does nothing under a barebones trainer."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=BAREBONES_LOG_WARNING)
        yield


@dataclass
class HarnessStep:
    """A full training step of a harness module on a fixed batch: ``HarnessStep.build(cfg, device)()``.

    ``batch``: ``random_batch(cfg.task)``; ``schedulers``: Lightning's parsed scheduler configs;
    ``autocast()``: the context of ``precision(cfg, device)`` around ``training_step``;
    ``steps_done``: how many steps ran (the ``batch_idx`` of the next ``training_step``).
    """

    module: L.LightningModule
    trainer: L.Trainer
    optimizer: torch.optim.Optimizer
    schedulers: list[LRSchedulerConfig]
    batch: Batch
    autocast: Callable[[], contextlib.AbstractContextManager]
    steps_done: int = 0

    @classmethod
    def build(cls, cfg: DictConfig, device: torch.device) -> HarnessStep:
        """``build_module(cfg)`` on ``device`` (seeded by ``cfg.seed``), its optimizer, a random batch."""
        torch.manual_seed(cfg.seed)
        module = build_module(cfg).to(device).train()
        trainer = barebones_trainer(cfg, device)
        module.trainer = trainer
        [optimizer], schedulers = _init_optimizers_and_lr_schedulers(module)
        batch = random_batch(cfg.task, device)
        return cls(module, trainer, optimizer, schedulers, batch, partial(precision, cfg, device))

    def __call__(self) -> None:
        self.optimizer.zero_grad()
        with self.autocast(), barebones_logging():
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
