"""Configuration checks that run before anything is built: each problem is one clear line.

``check_config(cfg)`` raises ``ConfigError`` naming the key, its value and what is valid; the
attention's options are checked by the registry's validator (``attention_zoo.registry``). What only
building can tell (the model's own arguments) fails in ``lra.train.build_model``, and checks that
need the prepared data (sequence length, vocabulary, a batch larger than the training split) run in
``LRADataModule.setup``: all before the first training step.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

import attention_zoo
from lra.errors import ConfigError
from lra.loggers import check_loggers
from lra.schedules import SCHEDULES

CLIPPING = ("norm", "value", None)  # protocol.clip: Lightning's gradient_clip_algorithm, or no clipping


@dataclass(frozen=True)
class Rule:
    """``test(value)`` must hold for every key in ``keys``; ``requirement`` says so in words."""

    keys: tuple[str, ...]
    test: Callable[[Any], bool]
    requirement: str


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


RULES = (
    Rule(
        (
            "task.seq_len",
            "task.vocab_size",
            "task.num_classes",
            "task.batch_size",
            "task.eval_every",
            "trainer.max_steps",
            "model.dim",
            "model.depth",
            "model.num_heads",
            "model.ffn_dim",
            "model.classifier_dim",
        ),
        lambda v: is_int(v) and v >= 1,
        "a positive integer",
    ),
    Rule(("task.warmup_steps",), lambda v: is_int(v) and v >= 0, "an integer >= 0"),
    Rule(("task.lr",), lambda v: is_number(v) and v > 0, "a number > 0"),
    Rule(("task.weight_decay",), lambda v: is_number(v) and v >= 0, "a number >= 0"),
    Rule(
        ("model.dropout", "protocol.select_after", "protocol.attention_dropout"),
        lambda v: is_number(v) and 0 <= v < 1,
        "a number in [0, 1)",
    ),
    Rule(("protocol.schedule",), lambda v: v in SCHEDULES, f"one of {', '.join(SCHEDULES)}"),
    Rule(("protocol.clip",), lambda v: v in CLIPPING, "one of norm, value, null (no clipping)"),
    Rule(("protocol.clip_value",), lambda v: is_number(v) and v > 0, "a number > 0"),
    Rule(("seed",), lambda v: is_int(v) and 0 <= v < 2**32, "an integer in [0, 2**32)"),
    Rule(("num_workers",), lambda v: is_int(v) and v >= 0, "an integer >= 0"),
    Rule(
        ("features", "threads"), lambda v: v is None or (is_int(v) and v >= 1), "null or a positive integer"
    ),
)

# Attention options bounded by another key: option -> (bound key, comparison, reason).
OPTION_BOUNDS = {
    "num_landmarks": ("task.seq_len", operator.le, "at most one landmark per position"),
}


def resolved(cfg: DictConfig) -> DictConfig:
    """A resolved copy of ``cfg``; an interpolation that cannot resolve becomes a ``ConfigError``."""
    try:
        copy = OmegaConf.create(OmegaConf.to_container(cfg, resolve=True))
    except OmegaConfBaseException as error:
        cause = error.__cause__ or error
        key = getattr(error, "full_key", None)
        raise ConfigError(f"cannot resolve {key or 'the config'}: {cause}".splitlines()[0]) from None
    return copy


def check_values(cfg: DictConfig) -> None:
    """Every key of ``RULES`` holds a valid value."""
    for rule in RULES:
        for key in rule.keys:
            value = OmegaConf.select(cfg, key)
            if not rule.test(value):
                raise ConfigError(f"{key}={value!r} is invalid: it must be {rule.requirement}")


def attention_options(attention: DictConfig) -> dict[str, Any]:
    """The core's own options in an attention config node (its ``_target_``, ``_partial_`` and name aside)."""
    return {key: value for key, value in attention.items() if key not in ("_target_", "_partial_", "name")}


def check_attention(cfg: DictConfig) -> None:
    """The attention is registered, its options are valid and within the bounds the task sets."""
    attention = cfg.attention
    names = attention_zoo.available()
    if attention.name not in names:
        skipped = "".join(f" ({line})" for line in attention_zoo.plugins.SKIPPED)
        raise ConfigError(
            f"attention.name={attention.name!r} is not registered; valid names: {', '.join(names)}{skipped}"
        )
    try:
        attention_zoo.spec(attention.name).checked(attention_options(attention))
    except ValueError as error:
        raise ConfigError(str(error).splitlines()[0]) from None
    for option, (bound_key, compare, reason) in OPTION_BOUNDS.items():
        if option in attention:
            bound = OmegaConf.select(cfg, bound_key)
            if not compare(attention[option], bound):
                raise ConfigError(
                    f"attention.{option}={attention[option]} exceeds {bound_key}={bound} ({reason})"
                )


def check_schedule(cfg: DictConfig) -> None:
    """The one-cycle schedule peaks at ``task.warmup_steps``, which must lie within the run."""
    if cfg.protocol.schedule == "one_cycle" and cfg.task.warmup_steps > cfg.trainer.max_steps:
        raise ConfigError(
            f"task.warmup_steps={cfg.task.warmup_steps} exceeds trainer.max_steps={cfg.trainer.max_steps}: "
            "the one_cycle schedule needs its peak within the run"
        )


def check_config(cfg: DictConfig) -> None:
    """Raise ``ConfigError`` (one line) for the first problem in ``cfg``; nothing is trained or written."""
    cfg = resolved(cfg)
    check_values(cfg)
    check_schedule(cfg)
    check_attention(cfg)
    check_loggers(cfg.logger)
