"""The self-pretraining stage of a job (``pretrain=masked``, docs/pretraining.md) and the weights
fine-tuning starts from.

- ``stage_steps``: each stage's steps: ``pretrain.steps``, then ``trainer.max_steps``; or with
  ``pretrain.share`` one budget of ``trainer.max_steps`` split between them. ``finetuning_config``
  is the config fine-tuning is built from (its ``trainer.max_steps``: fine-tuning's own steps, which
  its schedule, selection window and last validation follow).
- ``checkpoints/pretrained.pt`` (``WEIGHTS_FILE``): the encoder's weights of the pretraining
  checkpoint with the best ``val/pretrain_acc``, and what they were pretrained for and how (its
  ``meta``); ``pretrain.from`` reads it, and refuses it for another task, vocabulary, shape or attention.
- ``prepare_encoder``: before fine-tuning, pretrain the encoder in this job (afresh, or on from
  ``checkpoints/pretrain-last.ckpt``) unless an earlier segment finished that, then load the weights
  of ``pretrained.pt`` (or of ``pretrain.from``); a fine-tuning resumed from its own checkpoint takes
  its weights from there.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from lightning.fabric.utilities.rank_zero import rank_zero_only
from lightning.pytorch.loggers import Logger
from omegaconf import DictConfig, OmegaConf
from torch import nn

from lra.callbacks import EfficiencyMonitor
from lra.checkpoint_files import PRETRAIN_BEST_CHECKPOINT, check_checkpoint, write_checkpoint
from lra.errors import ConfigError
from lra.job_state import JobState
from lra.pretraining import MASK_TOKENS, MaskedPretrainModule, PretrainInputs
from lra.progress_bar import PRETRAINING
from lra.resume import CHECKPOINT_DIR, PRETRAIN_LAST_CHECKPOINT, RunPlan, is_pretraining_checkpoint
from lra.summary_json import planned_pretrain, pretrain_record
from lra.trainers import best_checkpoint, stage_trainer

WEIGHTS_FILE = "pretrained.pt"  # in checkpoints/
TRAINING_ONLY_OPTIONS = ("attention_dropout",)  # attention options that leave the weights' meaning alone
WEIGHTS_HINT = "give a run folder of a finished pretraining or its checkpoints/pretrained.pt"


def is_masked(cfg: DictConfig) -> bool:
    return cfg.pretrain.mode == "masked"


@dataclass(frozen=True)
class StageSteps:
    pretrain: int  # 0 for a run from scratch
    finetune: int


def stage_steps(cfg: DictConfig) -> StageSteps:
    """The steps of each stage (module docstring)."""
    total = cfg.trainer.max_steps
    if not is_masked(cfg):
        return StageSteps(0, total)
    if cfg.pretrain.share is None:
        return StageSteps(cfg.pretrain.steps, total)
    pretrain = round(cfg.pretrain.share * total)
    return StageSteps(pretrain, total - pretrain)


def finetuning_config(cfg: DictConfig) -> DictConfig:
    """``cfg`` with ``trainer.max_steps`` = fine-tuning's steps (``cfg`` itself when they are equal)."""
    steps = stage_steps(cfg).finetune
    if steps == cfg.trainer.max_steps:
        return cfg
    tuned = cfg.copy()
    tuned.trainer.max_steps = steps
    return tuned


def model_vocab_size(cfg: DictConfig) -> int:
    """The encoder's vocabulary: the task's, and [MASK] in both stages of a self-pretrained run."""
    return cfg.task.vocab_size + (MASK_TOKENS if is_masked(cfg) else 0)


def unwrapped(encoder: nn.Module) -> nn.Module:
    """The encoder itself, under a ``torch.compile`` wrapper if it has one (``model.compile``)."""
    return getattr(encoder, "_orig_mod", encoder)


def encoder_identity(cfg: DictConfig) -> dict[str, Any]:
    """What pretrained weights must share with the run that loads them (``check_compatible``)."""
    attention = OmegaConf.to_container(cfg.attention, resolve=True)
    return {
        "task": cfg.task.name,
        "dataset": cfg.task.dataset,
        "vocab_size": model_vocab_size(cfg),
        "seq_len": cfg.task.seq_len,
        "attention": {key: value for key, value in attention.items() if key not in TRAINING_ONLY_OPTIONS},
    }


def weights_file(source: Path) -> Path:
    """The weights file of ``pretrain.from``, absolute: a run folder's ``checkpoints/pretrained.pt``, or
    the file itself."""
    path = source / CHECKPOINT_DIR / WEIGHTS_FILE if source.is_dir() else source
    if not path.is_file():
        where = f"no {CHECKPOINT_DIR}/{WEIGHTS_FILE} in that folder" if source.is_dir() else "does not exist"
        raise ConfigError(f"pretrain.from={source}: {where}; {WEIGHTS_HINT}")
    return path.resolve()


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
    """Write a weights file atomically and stamped (``lra.checkpoint_files``): a job killed while writing
    leaves none."""
    write_checkpoint({"encoder": weights, "meta": meta}, path)


def check_compatible(
    path: Path, meta: dict[str, Any], weights: dict[str, torch.Tensor], cfg: DictConfig, encoder: nn.Module
) -> None:
    """A ``ConfigError`` (one line) when the weights of ``path`` were pretrained for another task, data
    set, vocabulary, sequence length or attention than ``cfg``'s, or differ from ``encoder`` in shape."""
    ours = encoder_identity(cfg)
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
    cfg: DictConfig, encoder: nn.Module, plan: RunPlan, loggers: list[Logger], state: JobState
) -> None:
    """Pretrain ``encoder`` in the run's folder (on from ``plan.checkpoint`` when that is a pretraining
    checkpoint), then write the weights of its best checkpoint to ``checkpoints/pretrained.pt``."""
    steps = stage_steps(cfg).pretrain
    settings = cfg.pretrain
    module = MaskedPretrainModule(
        encoder,
        dim=cfg.model.dim,
        vocab_size=cfg.task.vocab_size,
        mask_prob=settings.mask_prob,
        loss=settings.loss,
        lr=settings.lr,
        weight_decay=cfg.task.weight_decay,
        warmup_steps=settings.warmup_steps,
        max_steps=steps,
        val_seed=cfg.seed,
        attention_name=cfg.attention.name,
        finite_check_every=cfg.trainer.log_every_n_steps,
    )
    best = best_checkpoint(plan.directory, PRETRAIN_BEST_CHECKPOINT, "val/pretrain_acc")
    parts = state.pretrain_parts = stage_trainer(
        cfg,
        plan.directory,
        loggers,
        max_steps=steps,
        best=best,
        last_name=PRETRAIN_LAST_CHECKPOINT,
        efficiency=EfficiencyMonitor(elapsed_key="pretrain/elapsed_s", log_final=False),
        title=PRETRAINING,
    )
    resumed = plan.checkpoint if is_pretraining_checkpoint(plan.checkpoint) else None
    try:
        parts.trainer.fit(
            module, datamodule=PretrainInputs.of_config(cfg, settings.batch_size), ckpt_path=resumed
        )
    finally:
        state.pretrain["steps"] = parts.trainer.global_step
    check_checkpoint(Path(best.best_model_path))
    module.load_state_dict(
        torch.load(best.best_model_path, map_location="cpu", weights_only=True)["state_dict"]
    )
    meta = {
        **encoder_identity(cfg),
        "mask_prob": settings.mask_prob,
        "loss": settings.loss,
        "steps": parts.trainer.global_step,
        "masked_acc": float(best.best_model_score),
        "time_s": parts.efficiency.metrics["perf/train_time_s"],
    }
    if rank_zero_only.rank == 0:
        save_weights(plan.directory / CHECKPOINT_DIR / WEIGHTS_FILE, unwrapped(encoder).state_dict(), meta)
    parts.trainer.strategy.barrier("pretrained weights written")


def prepare_encoder(
    cfg: DictConfig, encoder: nn.Module, plan: RunPlan, loggers: list[Logger], state: JobState
) -> None:
    """Bring ``encoder`` (the fine-tuning model's, as built from the seed) to where fine-tuning starts
    and record in ``state.pretrain`` how it was pretrained (module docstring); nothing for a run from
    scratch."""
    if not is_masked(cfg):
        return
    state.pretrain = planned_pretrain(OmegaConf.to_container(cfg.pretrain, resolve=True))
    source = cfg.pretrain["from"]
    resuming_finetuning = plan.checkpoint is not None and not is_pretraining_checkpoint(plan.checkpoint)
    if source is not None:
        path = weights_file(Path(source))
    else:
        path = plan.directory / CHECKPOINT_DIR / WEIGHTS_FILE
        if not path.is_file():
            if resuming_finetuning:  # from a .ckpt of another folder: its weights are all there is
                return
            pretrain(cfg, encoder, plan, loggers, state)
    weights, meta = read_weights(path)
    check_compatible(path, meta, weights, cfg, encoder)
    fields = ("steps", "mask_prob", "loss", "masked_acc", "time_s")
    state.pretrain = pretrain_record(
        source=path if source is not None else None, **{k: meta[k] for k in fields}
    )
    if not resuming_finetuning:
        unwrapped(encoder).load_state_dict(weights)
