"""The checks of the attention a config names: registered, its options valid and within the task's
bounds, and able to take what the model asks of it (rotary positions, the causal mode). Part of the
resolving step (``lra.job.checks.check_config`` runs them); each problem is one ``ConfigError`` line.
"""

from __future__ import annotations

import operator
from typing import Any

from omegaconf import DictConfig, OmegaConf

import attention_zoo
from lra.config.errors import ConfigError
from lra.config.state_size import encoder_state_size
from lra.job.shortcuts import subject

# Attention options bounded by another key: option -> (bound key, comparison, reason).
OPTION_BOUNDS = {
    "num_landmarks": ("task.seq_len", operator.le, "at most one landmark per position"),
}


def attention_options(attention: DictConfig) -> dict[str, Any]:
    """The core's own options in an attention config node (its ``_target_``, ``_partial_`` and name aside)."""
    return {key: value for key, value in attention.items() if key not in ("_target_", "_partial_", "name")}


def check_attention(cfg: DictConfig, raw: DictConfig | None = None) -> None:
    """The attention is registered, its options are valid and within the bounds the task sets; the
    error of an option that a shortcut set names the shortcut (``lra.job.shortcuts``: ``raw``, the
    unresolved config, tells)."""
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
                named = subject(cfg if raw is None else raw, f"attention.{option}", attention[option])
                raise ConfigError(f"{named} exceeds {bound_key}={bound} ({reason})")


def check_rotary(cfg: DictConfig) -> None:
    """``model.position=rope`` only with an attention that takes rotary positions
    (``attention_zoo.check_rope``: a core that forms q·k; never a mixer)."""
    if cfg.model.position != "rope":
        return
    try:
        attention_zoo.check_rope(cfg.attention.name)
    except ValueError as error:
        raise ConfigError(f"model.position=rope: {error}".splitlines()[0]) from None


def check_causal(cfg: DictConfig) -> None:
    """``model.causal=true`` needs an attention with a causal form (``attention_zoo.supports_causal``) and
    the options that form needs (``s4d`` and ``mamba``: ``bidirectional=false``): the registry's line."""
    if not cfg.model.causal:
        return
    try:
        state_size(cfg)  # asks the registry as building does, a plugin without a figure too
    except ValueError as error:
        raise ConfigError(f"model.causal=true: {str(error).splitlines()[0]}") from None


def state_size(cfg: DictConfig) -> int | None:
    """The attention's state size per layer at the run's length and width (``model/state_size``)."""
    attention, model = (OmegaConf.to_container(node, resolve=True) for node in (cfg.attention, cfg.model))
    return encoder_state_size(attention, model, cfg.task.seq_len)
