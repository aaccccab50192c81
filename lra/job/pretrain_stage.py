"""The self-pretraining stage of a job (``pretrain=masked``, docs/pretraining.md) and the weights
fine-tuning starts from.

The stage is built from its ``PretrainRecord`` alone (``lra.job.resolve`` splits the steps between the
stages: ``lra.job.checks.stage_steps``).

- ``checkpoints/pretrained.pt`` (``WEIGHTS_FILE``): the encoder's weights of the pretraining
  checkpoint with the best ``val/pretrain_acc``, and what they were pretrained for and how (its
  ``meta``); ``pretrain.from`` reads it, and refuses it for another task, vocabulary, shape or attention.
- ``prepare_encoder``: before fine-tuning, pretrain the encoder in this job (afresh, or on from
  ``checkpoints/pretrain-last.ckpt``) unless an earlier segment finished that, then load the weights
  of ``pretrained.pt`` (or of ``pretrain.from``); a fine-tuning resumed from its own checkpoint takes
  its weights from there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from lightning.fabric.utilities.rank_zero import rank_zero_only
from lightning.pytorch.loggers import Logger
from torch import nn

from lra.config.errors import ConfigError
from lra.config.records import PretrainRecord
from lra.job.callbacks import EfficiencyMonitor
from lra.job.checkpoint_files import (
    PRETRAIN_BEST_CHECKPOINT,
    WEIGHTS_FILE,
    WEIGHTS_HINT,
    check_checkpoint,
    write_checkpoint,
)
from lra.job.job_state import JobState
from lra.job.progress_bar import PRETRAINING
from lra.job.resume import CHECKPOINT_DIR, PRETRAIN_LAST_CHECKPOINT, RunPlan, is_pretraining_checkpoint
from lra.job.trainers import best_checkpoint, stage_trainer
from lra.model.pretraining import MaskedPretrainModule, PretrainInputs
from lra.results.summary_json import pretrain_record


def unwrapped(encoder: nn.Module) -> nn.Module:
    """The encoder itself, under a ``torch.compile`` wrapper if it has one (``model.compile``)."""
    return getattr(encoder, "_orig_mod", encoder)


def read_weights(path: Path) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """The encoder's state and the ``meta`` of a weights file (verified when its SHA-256 is recorded)."""
    check_checkpoint(path)
    try:
        saved = torch.load(path, map_location="cpu", weights_only=True)
        return saved["encoder"], saved["meta"]
    except Exception as error:
        raise ConfigError(
            f"pretrain.from={path}: not a pretrained weights file ({type(error).__name__}); {WEIGHTS_HINT}"
        ) from None


def save_weights(path: Path, weights: dict[str, torch.Tensor], meta: dict[str, Any]) -> None:
    """Write a weights file atomically and stamped (``lra.job.checkpoint_files``): a job killed while writing
    leaves none."""
    write_checkpoint({"encoder": weights, "meta": meta}, path)


def check_compatible(
    path: Path,
    meta: dict[str, Any],
    weights: dict[str, torch.Tensor],
    ours: dict[str, Any],
    encoder: nn.Module,
) -> None:
    """A ``ConfigError`` (one line) when the weights of ``path`` were pretrained for another task, data
    set, vocabulary, sequence length or attention than ``ours`` (``PretrainRecord.identity``), or
    differ from ``encoder`` in shape."""
    for key, value in ours.items():
        if meta.get(key) != value:
            raise ConfigError(
                f"pretrain.from={path}: the weights were pretrained with {key}={meta.get(key)!r}, "
                f"this run has {key}={value!r}"
            )
    expected = unwrapped(encoder).state_dict()
    for name in [*expected, *(name for name in weights if name not in expected)]:  # the model's order
        shapes = [layout(entries.get(name, MISSING)) for entries in (weights, expected)]
        if shapes[0] != shapes[1]:
            raise ConfigError(
                f"pretrain.from={path}: the weights do not fit this model ({name}: {shapes[0]} there, "
                f"{shapes[1]} here); pretrain with this run's model options"
            )


MISSING = object()


def layout(entry: Any) -> Any:
    """What must agree between two state-dict entries: a tensor's shape, the kind of a module's extra
    state (BigBird's pattern seed: the pretrained one is loaded with the weights), None where absent."""
    if entry is MISSING:
        return None
    return tuple(entry.shape) if isinstance(entry, torch.Tensor) else type(entry).__name__


def pretrain(
    record: PretrainRecord, encoder: nn.Module, plan: RunPlan, loggers: list[Logger], state: JobState
) -> None:
    """Pretrain ``encoder`` in the run's folder (on from ``plan.checkpoint`` when that is a pretraining
    checkpoint), then write the weights of its best checkpoint to ``checkpoints/pretrained.pt``."""
    module = MaskedPretrainModule(
        encoder,
        dim=record.dim,
        vocab_size=record.vocab_size,
        mask_prob=record.mask_prob,
        loss=record.loss,
        lr=record.lr,
        weight_decay=record.weight_decay,
        warmup_steps=record.warmup_steps,
        max_steps=record.trainer.max_steps,
        val_seed=record.seed,
        attention_name=record.attention_name,
        finite_check_every=record.finite_check_every,
        schedule=record.schedule,
        betas=record.betas,
        eps=record.eps,
    )
    best = best_checkpoint(plan.directory, PRETRAIN_BEST_CHECKPOINT, "val/pretrain_acc")
    parts = state.pretrain_parts = stage_trainer(
        record.trainer,
        plan.directory,
        loggers,
        best=best,
        last_name=PRETRAIN_LAST_CHECKPOINT,
        efficiency=EfficiencyMonitor(elapsed_key="pretrain/elapsed_s", log_final=False),
        title=PRETRAINING,
    )
    resumed = plan.checkpoint if is_pretraining_checkpoint(plan.checkpoint) else None
    try:
        parts.trainer.fit(module, datamodule=PretrainInputs.of_record(record.data), ckpt_path=resumed)
    finally:
        state.pretrain["steps"] = parts.trainer.global_step
    check_checkpoint(Path(best.best_model_path))
    module.load_state_dict(
        torch.load(best.best_model_path, map_location="cpu", weights_only=True)["state_dict"]
    )
    meta = {
        **record.identity,
        "mask_prob": record.mask_prob,
        "loss": record.loss,
        "steps": parts.trainer.global_step,
        "masked_acc": float(best.best_model_score),
        "time_s": parts.efficiency.metrics["perf/train_time_s"],
    }
    if rank_zero_only.rank == 0:
        save_weights(plan.directory / CHECKPOINT_DIR / WEIGHTS_FILE, unwrapped(encoder).state_dict(), meta)
    parts.trainer.strategy.barrier("pretrained weights written")


def prepare_encoder(
    record: PretrainRecord | None, encoder: nn.Module, plan: RunPlan, loggers: list[Logger], state: JobState
) -> None:
    """Bring ``encoder`` (the fine-tuning model's, as built from the seed) to where fine-tuning starts
    and record in ``state.pretrain`` how it was pretrained (module docstring); nothing for a run from
    scratch (``record`` None)."""
    if record is None:
        return
    state.pretrain = record.planned
    source = record.weights_from
    resuming_finetuning = plan.checkpoint is not None and not is_pretraining_checkpoint(plan.checkpoint)
    if source is not None:
        path = source
    else:
        path = plan.directory / CHECKPOINT_DIR / WEIGHTS_FILE
        if not path.is_file():
            if resuming_finetuning:  # from a .ckpt of another folder: its weights are all there is
                return
            pretrain(record, encoder, plan, loggers, state)
    weights, meta = read_weights(path)
    check_compatible(path, meta, weights, record.identity, encoder)
    fields = ("steps", "mask_prob", "loss", "masked_acc", "time_s")
    state.pretrain = pretrain_record(
        source=path if source is not None else None, **{k: meta[k] for k in fields}
    )
    if not resuming_finetuning:
        unwrapped(encoder).load_state_dict(weights)
