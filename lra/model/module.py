"""The LightningModule: cross-entropy training of an ``LRAClassifier`` (one class an example) or a
``TokenClassifier`` (one a labelled position) with AdamW and a schedule of ``lra.model.schedules``; accuracy
over whole validation and test splits; the best validation accuracy within the selection window."""

from __future__ import annotations

from typing import Any

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn
from torchmetrics import MaxMetric, MeanMetric
from torchmetrics.classification import MulticlassAccuracy

from lra.data import IGNORE
from lra.model.schedules import build_schedule

# AdamW settings of the reference LRA PyTorch code (Nyströmformer / Skyformer).
ADAM_BETAS = (0.9, 0.999)
ADAM_EPS = 1e-6


def parameter_groups(module: nn.Module) -> list[dict[str, Any]]:
    """AdamW's parameter groups: one of every parameter at the run's settings, then one per distinct
    ``_optim`` dict that parameters declare (its ``lr`` and ``weight_decay`` replace the run's; the
    S4 repository's convention, which the SSM mixers and any plugin may follow)."""
    ordinary: list[nn.Parameter] = []
    declared: dict[tuple[tuple[str, Any], ...], list[nn.Parameter]] = {}
    for parameter in module.parameters():
        settings = getattr(parameter, "_optim", None)
        if settings:
            declared.setdefault(tuple(sorted(settings.items())), []).append(parameter)
        else:
            ordinary.append(parameter)
    return [{"params": ordinary}, *({"params": group, **dict(key)} for key, group in declared.items())]


def adamw_with_schedule(
    module: nn.Module,
    lr: float,
    weight_decay: float,
    schedule: str,
    warmup_steps: int,
    max_steps: int,
    betas: tuple[float, float] = ADAM_BETAS,
    eps: float = ADAM_EPS,
) -> dict[str, Any]:
    """What ``configure_optimizers`` returns: AdamW over ``module``'s ``parameter_groups`` and the
    schedule ``schedule`` of ``lra.model.schedules`` (each group on its own learning rate), stepped after
    every optimizer step.

    AdamW's decay ``p ← p − lr_t · weight_decay · p`` is decoupled from the gradient's moments and
    scaled by the scheduled rate ``lr_t``: the update of Flax's ``optim.Adam(weight_decay=...)`` too,
    which the LRA code trains with."""
    optimizer = torch.optim.AdamW(
        parameter_groups(module), lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay
    )
    scheduler = build_schedule(schedule, optimizer, lr, warmup_steps, max_steps)
    return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}


def configured_adamw(module: Any) -> dict[str, Any]:
    """``adamw_with_schedule`` with the settings a module holds as attributes (``lr``,
    ``weight_decay``, ``schedule``, ``warmup_steps``, ``max_steps``, ``betas``, ``eps``)."""
    return adamw_with_schedule(
        module,
        module.lr,
        module.weight_decay,
        module.schedule,
        module.warmup_steps,
        module.max_steps,
        module.betas,
        module.eps,
    )


class NonFiniteLossError(FloatingPointError):
    """The training loss became NaN or infinite; the message names the step and the attention."""


class NonFiniteLossWatch:
    """Finds the first step whose training loss is NaN or infinite without waiting on the device.

    ``record`` keeps, on the loss's device, the first such step (-1: none); ``check`` reads it back
    (one host-device transfer) and raises. Reading it every step would stall a GPU's queue, so
    ``observe`` checks on the CPU every step and on a GPU every ``check_every`` steps, and the module
    at each evaluation: a run that goes non-finite stops within that many steps and names the step
    where it happened.
    """

    def __init__(
        self,
        attention_name: str,
        check_every: int = 50,
        loss_name: str = "training loss",
        lr_key: str = "task.lr",
    ) -> None:
        self.attention_name = attention_name
        self.check_every = check_every
        self.loss_name = loss_name  # what the message calls the loss, and the learning rate to lower
        self.lr_key = lr_key
        self.first_step: torch.Tensor | None = None

    def observe(self, loss: torch.Tensor, step: int) -> None:
        """``record`` the loss of ``step``, and ``check`` when it is time to (class docstring)."""
        self.record(loss, step)
        if loss.device.type != "cuda" or step % self.check_every == 0:
            self.check()

    def record(self, loss: torch.Tensor, step: int) -> None:
        if self.first_step is None or self.first_step.device != loss.device:
            self.first_step = torch.full((), -1, dtype=torch.long, device=loss.device)
        bad = ~torch.isfinite(loss.detach()) & (self.first_step < 0)
        self.first_step = torch.where(bad, torch.full_like(self.first_step, step), self.first_step)

    def check(self) -> None:
        if self.first_step is None:
            return
        step = int(self.first_step)
        if step >= 0:
            raise NonFiniteLossError(
                f"{self.loss_name} is not finite (NaN or inf) at step {step} with attention "
                f"{self.attention_name!r}; lower {self.lr_key} or change the attention's options"
            )


class LRALitModule(L.LightningModule):
    """Trains ``model`` (tokens, lengths -> logits) on ``(tokens, lengths, labels)`` batches.

    Logs ``train/loss``, ``train/acc``, ``val/loss``, ``val/acc``, ``val/acc_best``, ``test/loss``
    and ``test/acc`` (accuracy: torchmetrics, over the whole split); a test pass with
    ``testing_final_weights`` set logs ``test/loss_final`` and ``test/acc_final`` instead.
    ``schedule`` names a schedule of ``lra.model.schedules`` with ``warmup_steps`` and ``max_steps``;
    ``betas`` and ``eps`` are AdamW's. ``token_level``: the model predicts at every position
    (logits (B, N, C), labels (B, N)); loss and accuracy count the labelled positions only (labels
    other than ``IGNORE``), each query once.
    ``val/acc_best`` counts only the evaluations in the selection window (``in_selection_window``:
    after step ``selectable_after``), which ``lra.job.callbacks.BestCheckpointInWindow`` also asks to
    choose the checkpoint that is tested. A NaN or infinite training loss raises
    ``NonFiniteLossError`` (see ``NonFiniteLossWatch``).
    """

    def __init__(
        self,
        model: nn.Module,
        *,
        num_classes: int,
        lr: float,
        weight_decay: float,
        warmup_steps: int,
        max_steps: int,
        schedule: str,
        selectable_after: int,
        attention_name: str,
        finite_check_every: int = 50,
        betas: tuple[float, float] = ADAM_BETAS,
        eps: float = ADAM_EPS,
        token_level: bool = False,
    ) -> None:
        super().__init__()
        self.model = model
        self.token_level = token_level
        self.lr = lr
        self.weight_decay = weight_decay
        self.warmup_steps = warmup_steps
        self.max_steps = max_steps
        self.schedule = schedule
        self.betas = betas
        self.eps = eps
        self.selectable_after = selectable_after
        self.nonfinite = NonFiniteLossWatch(attention_name, finite_check_every)
        # validate_args=False: its input checks read values back from the device every step.
        ignored = {"ignore_index": IGNORE} if token_level else {}
        self.train_acc = MulticlassAccuracy(num_classes, average="micro", validate_args=False, **ignored)
        self.val_acc = MulticlassAccuracy(num_classes, average="micro", **ignored)
        self.test_acc = MulticlassAccuracy(num_classes, average="micro", **ignored)
        self.val_loss = MeanMetric()
        self.test_loss = MeanMetric()
        self.val_acc_best = MaxMetric()
        self.val_acc_best.persistent(True)  # in checkpoints: a resumed run keeps its best accuracy so far
        self.testing_final_weights = False  # a test pass of the final weights logs test/*_final

    def forward(self, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        return self.model(tokens, lengths)

    def scored(self, batch: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, torch.Tensor]:
        """The batch's logits and labels: (B, C), (B,); or every position's, (B·N, C), (B·N), when
        ``token_level`` (unlabelled positions hold ``IGNORE``, which loss and accuracy skip)."""
        tokens, lengths, labels = batch
        logits = self(tokens, lengths)
        if self.token_level:
            return logits.flatten(0, 1), labels.flatten()  # (B·N, C), (B·N)
        return logits, labels

    def training_step(self, batch: tuple[torch.Tensor, ...], batch_idx: int) -> torch.Tensor:
        logits, labels = self.scored(batch)
        loss = F.cross_entropy(logits.float(), labels)
        self.nonfinite.observe(loss, self.global_step)
        self.train_acc(logits, labels)
        self.log("train/loss", loss, prog_bar=True)
        self.log("train/acc", self.train_acc, prog_bar=True)
        return loss

    def evaluate(
        self, batch: tuple[torch.Tensor, ...], loss_metric: MeanMetric, acc_metric: MulticlassAccuracy
    ) -> None:
        logits, labels = self.scored(batch)
        losses = F.cross_entropy(logits.float(), labels, reduction="none")  # 0 where IGNORE
        if self.token_level:  # the mean over the labelled positions
            loss_metric.update(losses, (labels != IGNORE).to(losses.dtype))
        else:
            loss_metric.update(losses)
        acc_metric.update(logits, labels)

    def on_validation_start(self) -> None:
        self.nonfinite.check()

    def validation_step(self, batch: tuple[torch.Tensor, ...], batch_idx: int) -> None:
        self.evaluate(batch, self.val_loss, self.val_acc)
        self.log("val/loss", self.val_loss, prog_bar=True)
        self.log("val/acc", self.val_acc, prog_bar=True)

    @property
    def in_selection_window(self) -> bool:
        """Whether the evaluation now counts for ``val/acc_best`` and the tested checkpoint: not the
        sanity check, and after step ``selectable_after``."""
        return not self.trainer.sanity_checking and self.global_step > self.selectable_after

    def on_validation_epoch_end(self) -> None:
        if not self.in_selection_window:
            return
        self.val_acc_best(self.val_acc.compute())
        self.log("val/acc_best", self.val_acc_best.compute(), prog_bar=True)

    def test_step(self, batch: tuple[torch.Tensor, ...], batch_idx: int) -> None:
        self.evaluate(batch, self.test_loss, self.test_acc)
        suffix = "_final" if self.testing_final_weights else ""
        self.log(f"test/loss{suffix}", self.test_loss)
        self.log(f"test/acc{suffix}", self.test_acc)

    def configure_optimizers(self) -> dict[str, Any]:
        return configured_adamw(self)
