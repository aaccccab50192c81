"""Configuration checks that run before anything is built: each problem is one clear line.

``check_config(cfg)`` raises ``ConfigError`` naming the key, its value and what is valid. One
validator checks every value: the attention registry's (``attention_zoo.registry.OptionType``), which
reads a core's options from its annotations and the harness's own keys from ``CONFIG_KEYS``, written
in the same annotations (``PositiveInt``, ``Probability``, ``Literal[...]``, ``X | None``). What only
building can tell (the model's own arguments) fails in ``lra.job.train.build_model``, and checks that
need the prepared data (sequence length, vocabulary, a batch larger than the training split) run in
``LRADataModule.setup``: all before the first training step.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import lightning as L
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from attention_zoo.option_types import (
    Bounds,
    NonNegativeFloat,
    NonNegativeInt,
    OptionType,
    PositiveFloat,
    PositiveInt,
    Probability,
)
from attention_zoo.parts.rotary import RopeFraction
from lra.config.errors import ConfigError
from lra.config.hydra_errors import nearest
from lra.data.recall import recall_task
from lra.job.attention_checks import check_attention, check_causal, check_rotary
from lra.job.checkpoint_files import CHECKPOINT_DIR, WEIGHTS_FILE, WEIGHTS_HINT
from lra.job.loggers import check_loggers
from lra.model.heads import ACTIVATIONS, DUAL_FEATURES, POOLINGS
from lra.model.norms import NORMS
from lra.model.positions import POSITION_KINDS
from lra.model.pretraining import OBJECTIVES
from lra.model.schedules import SCHEDULES

Seed = Annotated[int, Bounds(low=0, high=2**32, high_open=True)]
OpenFraction = Annotated[float, Bounds(low=0, high=1, low_open=True, high_open=True)]

# The harness's own keys and what each accepts, in the annotations the attention registry reads from
# the cores' signatures: one validator (``OptionType``) for these and for every attention option.
CONFIG_KEYS: dict[str, Any] = {
    "task.seq_len": PositiveInt,
    "task.vocab_size": PositiveInt,
    "task.num_classes": PositiveInt,
    "task.batch_size": PositiveInt,
    "task.eval_every": PositiveInt,
    "task.warmup_steps": NonNegativeInt,
    "task.lr": PositiveFloat,
    "task.weight_decay": NonNegativeFloat,
    "trainer.max_steps": PositiveInt,
    "trainer.accumulate_grad_batches": PositiveInt,
    "model.dim": PositiveInt,
    "model.depth": PositiveInt,
    "model.num_heads": PositiveInt,
    "model.ffn_dim": NonNegativeInt,
    "model.dropout": Probability,
    "model.qkv_dim": PositiveInt | None,
    "model.qkv_bias": bool,
    "model.learn_pos_emb": bool,
    "model.cls_token": bool,
    "model.embedding_init_std": PositiveFloat,
    "model.pooling": Literal[tuple(POOLINGS)],
    "model.dual_features": Literal[tuple(DUAL_FEATURES)],
    "model.positions": bool,
    "model.position": Literal[tuple(POSITION_KINDS)],
    "model.rope_fraction": RopeFraction,
    "model.norm": Literal[tuple(NORMS)],
    "model.prenorm": bool,
    "model.mixer_dropout": Probability,
    "model.decay_norms_biases": bool,
    "model.classifier_activation": Literal[tuple(ACTIVATIONS)],
    "model.causal": bool,
    "protocol.schedule": Literal[tuple(SCHEDULES)],
    "protocol.clip": Literal["norm", "value", None],  # Lightning's gradient_clip_algorithm, or no clipping
    "protocol.clip_value": PositiveFloat,
    "protocol.select_after": Probability,
    "protocol.tested": Literal["best", "final"],
    "protocol.adam_eps": PositiveFloat,
    "protocol.schedule_steps": PositiveInt | None,
    "protocol.attention_dropout": Probability,  # the exact cores' option of the same name and type
    "seed": Seed,
    "num_workers": NonNegativeInt,
    "persistent_workers": bool,
    "features": PositiveInt | None,
    "threads": PositiveInt | None,
    "steady_heap": bool,
    "pretrain.mode": Literal["none", "masked"],
}
# The keys of a recall task (``task.generator``), checked when it has one.
RECALL_KEYS = {
    "task.train_examples": PositiveInt,
    "task.test_examples": PositiveInt,
    "task.training_set": Literal["fixed", "fresh"],
}
# The keys of ``pretrain=masked`` (conf/pretrain/masked.yaml), checked when it is chosen.
PRETRAIN_KEYS: dict[str, Any] = {
    "pretrain.mask_prob": OpenFraction,
    "pretrain.loss": Literal[tuple(OBJECTIVES)],
    "pretrain.steps": PositiveInt,
    "pretrain.lr": PositiveFloat,
    "pretrain.batch_size": PositiveInt,
    "pretrain.warmup_steps": NonNegativeInt,
    "pretrain.schedule": Literal[tuple(SCHEDULES)],
    "pretrain.share": OpenFraction | None,
    "pretrain.from": str | None,
}
BETA = OptionType.of(Probability)
KEY_TYPES = {key: OptionType.of(annotation) for key, annotation in CONFIG_KEYS.items()}
PRETRAIN_KEY_TYPES = {key: OptionType.of(annotation) for key, annotation in PRETRAIN_KEYS.items()}
RECALL_KEY_TYPES = {key: OptionType.of(annotation) for key, annotation in RECALL_KEYS.items()}


def is_masked(cfg: DictConfig) -> bool:
    return cfg.pretrain.mode == "masked"


@dataclass(frozen=True)
class StageSteps:
    pretrain: int  # 0 for a run from scratch
    finetune: int


def stage_steps(cfg: DictConfig) -> StageSteps:
    """Each stage's steps: ``pretrain.steps``, then ``trainer.max_steps``; or with ``pretrain.share`` one
    budget of ``trainer.max_steps`` split between them (docs/pretraining.md)."""
    total = cfg.trainer.max_steps
    if not is_masked(cfg):
        return StageSteps(0, total)
    if cfg.pretrain.share is None:
        return StageSteps(cfg.pretrain.steps, total)
    pretrain = round(cfg.pretrain.share * total)
    return StageSteps(pretrain, total - pretrain)


def weights_file(source: Path) -> Path:
    """The weights file of ``pretrain.from``, absolute: a run folder's ``checkpoints/pretrained.pt``, or
    the file itself."""
    path = source / CHECKPOINT_DIR / WEIGHTS_FILE if source.is_dir() else source
    if not path.is_file():
        where = f"no {CHECKPOINT_DIR}/{WEIGHTS_FILE} in that folder" if source.is_dir() else "does not exist"
        raise ConfigError(f"pretrain.from={source}: {where}; {WEIGHTS_HINT}")
    return path.resolve()


def resolved(cfg: DictConfig) -> DictConfig:
    """A resolved copy of ``cfg``; an interpolation that cannot resolve becomes a ``ConfigError``."""
    try:
        copy = OmegaConf.create(OmegaConf.to_container(cfg, resolve=True))
    except OmegaConfBaseException as error:
        cause = error.__cause__ or error
        key = getattr(error, "full_key", None)
        raise ConfigError(f"cannot resolve {key or 'the config'}: {cause}".splitlines()[0]) from None
    return copy


def check_values(cfg: DictConfig, key_types: dict[str, OptionType] = KEY_TYPES) -> None:
    """Every key of ``key_types`` (``CONFIG_KEYS``'s) holds a value its type accepts."""
    for key, kind in key_types.items():
        value = OmegaConf.select(cfg, key)
        if not kind.accepts(value):
            raise ConfigError(f"{key}={value!r} is invalid: it must be {kind.describe(as_override=True)}")


def check_widths(cfg: DictConfig) -> None:
    """``model.classifier_dim`` (one hidden width, or a list of them; ``[]``: a linear classifier) and
    ``protocol.adam_betas`` (two numbers in [0, 1)) hold valid lists."""
    value = cfg.model.classifier_dim
    widths = value if OmegaConf.is_list(value) else [value]
    if not all(KEY_TYPES["model.dim"].accepts(width) for width in widths):
        raise ConfigError(
            f"model.classifier_dim={value!r} is invalid: it must be an integer >= 1 or a list of them "
            "([] for a linear classifier)"
        )
    betas = cfg.protocol.adam_betas
    if not (OmegaConf.is_list(betas) and len(betas) == 2 and all(map(BETA.accepts, betas))):
        raise ConfigError(f"protocol.adam_betas={betas!r} is invalid: it must be two numbers in [0, 1)")


def check_schedule(cfg: DictConfig) -> None:
    """The one-cycle schedule peaks at ``task.warmup_steps``, which must lie within the fine-tuning:
    torch's ``OneCycleLR`` divides by zero unless ``2 <= warmup_steps < steps``."""
    steps = stage_steps(cfg).finetune
    warmup = cfg.task.warmup_steps
    if cfg.protocol.schedule == "one_cycle" and not 2 <= warmup < steps:
        total = f"trainer.max_steps={cfg.trainer.max_steps}"
        limit = total if steps == cfg.trainer.max_steps else f"the {steps} fine-tuning steps of {total}"
        relation = "is below 2" if warmup < 2 else f"{'equals' if warmup == steps else 'exceeds'} {limit}"
        raise ConfigError(
            f"task.warmup_steps={warmup} {relation}: the one_cycle schedule needs its peak within the run"
        )


def check_pretrain(cfg: DictConfig) -> None:
    """``pretrain=masked``: valid values, both stages at least one step long, and ``pretrain.from``
    naming a weights file (whether those weights fit is checked when they are loaded)."""
    if cfg.pretrain.mode != "masked":
        return
    check_values(cfg, PRETRAIN_KEY_TYPES)
    steps = stage_steps(cfg)
    if min(steps.pretrain, steps.finetune) < 1:
        raise ConfigError(
            f"pretrain.share={cfg.pretrain.share} of trainer.max_steps={cfg.trainer.max_steps} leaves "
            f"{steps.pretrain} pretraining and {steps.finetune} fine-tuning steps; each stage needs one"
        )
    if cfg.pretrain["from"] is not None:
        weights_file(Path(cfg.pretrain["from"]))


def check_recall(cfg: DictConfig) -> None:
    """A recall task (``task.generator``): its generator builds from these options (one line naming a bad
    option, pairs that do not fit the length, a vocabulary too small), before anything resolves its
    shapes; its set sizes are valid; it trains from scratch on one sequence an example."""
    if cfg.task.get("generator") is None:
        return
    recall_task(OmegaConf.to_container(cfg.task.generator, resolve=True))
    check_values(cfg, RECALL_KEY_TYPES)
    if cfg.task.dual or is_masked(cfg):
        raise ConfigError(
            f"task={cfg.task.name} (a recall generator) needs task.dual=false and pretrain=none, got "
            f"task.dual={cfg.task.dual}, pretrain={cfg.pretrain.mode}"
        )


def check_trainer(cfg: DictConfig) -> None:
    """Every ``trainer.*`` key is an argument of Lightning's Trainer (``+trainer.KEY=V`` adds any key)."""
    arguments = list(inspect.signature(L.Trainer.__init__).parameters)
    for key in cfg.trainer:
        if key not in arguments:
            near = nearest(str(key), arguments)
            hint = f"; did you mean trainer.{near[0]}?" if near else ""
            raise ConfigError(f"trainer.{key} is not an argument of Lightning's Trainer{hint}")


def check_config(cfg: DictConfig) -> None:
    """Raise ``ConfigError`` (one line) for the first problem in ``cfg``; nothing is trained or written."""
    check_recall(cfg)  # a recall task's shapes resolve from its generator
    raw, cfg = cfg, resolved(cfg)
    check_values(cfg)
    check_widths(cfg)
    check_trainer(cfg)
    check_pretrain(cfg)
    check_schedule(cfg)
    check_attention(cfg, raw)
    check_rotary(cfg)
    check_causal(cfg)
    check_loggers(OmegaConf.to_container(cfg.logger, resolve=True))
