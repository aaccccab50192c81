"""The attention registry: decorators that record each core and each mixer with its options.

A core is an ``nn.Module`` whose constructor takes ``head_dim``, ``num_heads`` and ``seq_len``
(keyword-only, given by the model that holds it) plus its own options, each with its paper's
default and a type annotation; ``@register_attention`` records it. A mixer takes the place of the
whole multi-head attention, ``(x, mask) -> out`` on ``(batch, seq, dim)``: its constructor takes
``dim`` and ``seq_len`` and its options, and ``@register_mixer`` records it. The registry reads the
options, defaults and annotations from the constructor's signature, so each is stated exactly once,
and ``build_attention`` validates every value against its annotation before the core or mixer is
built (the option types: ``attention_zoo.option_types``, re-exported here for cores and plugins).
``OptionType`` is the one validator of the project: the harness checks its own config keys with it
too (``lra.job.checks``).

The causal mode is, like the shapes, the model's to give, not an option: an entry registered with
``causal=True`` takes a keyword-only ``causal: bool = False`` and with ``causal=True`` lets no position
see a later one; ``build_attention(..., causal=True)`` refuses every other entry in one line.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from torch import nn

from attention_zoo.option_types import (  # noqa: F401  (re-exported: cores and plugins import them here)
    Bounds,
    Even,
    EvenPositiveInt,
    NonNegativeFloat,
    NonNegativeInt,
    Odd,
    OddPositiveInt,
    OptionType,
    PositiveFloat,
    PositiveInt,
    Probability,
)

CORE_SHAPES = ("head_dim", "num_heads", "seq_len")
MIXER_SHAPES = ("dim", "seq_len")
SHAPE_ARGUMENTS = ("dim", "head_dim", "num_heads", "seq_len")  # every shape a model passes
MODEL_ARGUMENTS = (*SHAPE_ARGUMENTS, "causal")  # what the model passes: never an option
SHAPE_TYPE = OptionType.of(PositiveInt)


@dataclass(frozen=True)
class AttentionSpec:
    """What the registry knows of one core or mixer.

    Attributes:
        name: registry name (``standard``, ``nystrom``, ``s4d``, ...).
        cls: the core's (or mixer's) class.
        options: option name -> paper default (shape arguments excluded).
        option_types: option name -> what it accepts (from the constructor's annotations).
        approximates: name of the exact attention this core approximates, or None if it is exact
            (a mixer approximates nothing).
        budget_option: the option that a shared ``features`` budget sets (landmarks, projection
            dimension, random features, state size), or None when it has no such size.
        mixer: True for a mixer (it replaces multi-head attention), False for a core.
        causal: whether it has a causal form (``build_attention(..., causal=True)``).
        rope: whether the core takes rotary positions on q and k (``attention_zoo.parts.rotary``): declared
            by a core whose output depends on q and k only through their dot products, so that rotating
            both makes it a function of relative positions. Never for a mixer.
    """

    name: str
    cls: type[nn.Module]
    options: dict[str, Any]
    option_types: dict[str, OptionType]
    approximates: str | None
    budget_option: str | None
    mixer: bool = False
    causal: bool = False
    rope: bool = False

    @property
    def shapes(self) -> tuple[str, ...]:
        """The shape arguments its constructor takes from the model."""
        return MIXER_SHAPES if self.mixer else CORE_SHAPES

    def checked(self, options: dict[str, Any]) -> dict[str, Any]:
        """``options`` validated against their types: a ``ValueError`` naming the core, the option,
        the value and what is valid for the first one that is wrong, or for an unknown option."""
        unknown = sorted(set(options) - set(self.options) - set(SHAPE_ARGUMENTS))
        if unknown:
            valid = ", ".join(f"{k}={v!r}" for k, v in self.options.items()) or "none"
            raise ValueError(f"attention {self.name!r} has no option(s) {unknown}; valid options: {valid}")
        checked = {}
        for option, value in options.items():
            kind = SHAPE_TYPE if option in SHAPE_ARGUMENTS else self.option_types[option]
            try:
                checked[option] = kind.check(value)
            except ValueError as error:
                raise ValueError(f"attention {self.name!r}: {option} {error}, got {value!r}") from None
        return checked


_REGISTRY: dict[str, AttentionSpec] = {}


def register(
    name: str,
    shapes: tuple[str, ...],
    approximates: str | None,
    budget_option: str | None,
    causal: bool,
    rope: bool = False,
) -> Callable[[type[nn.Module]], type[nn.Module]]:
    """The class decorator of ``register_attention`` (``shapes``: ``CORE_SHAPES``) and ``register_mixer``.
    ``causal``: the constructor takes a keyword-only ``causal``, and only then."""

    def decorate(cls: type[nn.Module]) -> type[nn.Module]:
        if name in _REGISTRY:
            raise ValueError(f"attention {name!r} is registered twice")
        params = inspect.signature(cls.__init__).parameters
        missing = [arg for arg in shapes if arg not in params]
        if missing:
            raise TypeError(f"{cls.__name__}.__init__ must accept {missing}")
        stray = [arg for arg in SHAPE_ARGUMENTS if arg in params and arg not in shapes]
        if stray:  # the model passes these only to entries of the other kind: as options they would be lost
            raise TypeError(
                f"{cls.__name__}.__init__ takes {stray}, shape arguments of the other kind of entry; "
                f"name the option otherwise (a mixer's heads: `heads`)"
            )
        if causal != ("causal" in params):
            flag = "registered with causal=True" if causal else "registered without causal=True"
            raise TypeError(f"{cls.__name__} is {flag}: its __init__ takes `causal` exactly when flagged")
        hints = typing.get_type_hints(cls.__init__, include_extras=True)
        options = {
            p.name: p.default
            for p in params.values()
            if p.name != "self" and p.name not in MODEL_ARGUMENTS and p.kind is p.KEYWORD_ONLY
        }
        unannotated = [option for option in options if option not in hints]
        if unannotated:
            raise TypeError(f"{cls.__name__}: options {unannotated} need a type annotation")
        types_ = {option: OptionType.of(hints[option]) for option in options}
        if budget_option is not None and budget_option not in options:
            raise TypeError(f"{cls.__name__}: budget option {budget_option!r} is not one of its options")
        mixer = shapes == MIXER_SHAPES
        _REGISTRY[name] = AttentionSpec(
            name, cls, options, types_, approximates, budget_option, mixer, causal, rope
        )
        return cls

    return decorate


def register_attention(
    name: str,
    *,
    approximates: str | None = None,
    budget_option: str | None = None,
    causal: bool = False,
    rope: bool = False,
) -> Callable[[type[nn.Module]], type[nn.Module]]:
    """Class decorator that adds a core to the registry under ``name``; ``causal=True`` declares its
    causal form (its constructor then takes ``causal: bool = False``), ``rope=True`` that it takes
    rotary positions (``AttentionSpec.rope``)."""
    return register(name, CORE_SHAPES, approximates, budget_option, causal, rope)


def register_mixer(
    name: str, *, budget_option: str | None = None, causal: bool = False
) -> Callable[[type[nn.Module]], type[nn.Module]]:
    """Class decorator that adds a mixer to the registry under ``name``: its constructor takes ``dim``
    and ``seq_len`` (keyword-only) and its options; ``forward(x, mask)`` maps (batch, seq, dim) and a
    (batch, seq) bool mask (True = real token) or None to (batch, seq, dim). ``causal`` as for cores."""
    return register(name, MIXER_SHAPES, None, budget_option, causal)


def available() -> list[str]:
    """Names of every registered attention (cores and mixers), sorted."""
    return sorted(_REGISTRY)


def spec(name: str) -> AttentionSpec:
    """The registry entry for ``name``; a ``ValueError`` listing the valid names if unknown."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown attention {name!r}; valid names: {', '.join(available())}") from None


def supports_causal(name: str) -> bool:
    """Whether ``name`` has a causal form, without building it; a ``ValueError`` if ``name`` is unknown."""
    return spec(name).causal


def checked_causal(entry: AttentionSpec, causal: Any) -> dict[str, bool]:
    """The ``causal`` argument for ``entry``'s constructor: {} when False (so the non-causal path is
    the constructor's own default), ``{"causal": True}`` when its entry has a causal form, else one
    ``ValueError`` line naming it and listing those that have one."""
    if not isinstance(causal, bool):
        raise ValueError(
            f"attention {entry.name!r}: causal must be {OptionType(bool).describe()}, got {causal!r}"
        )
    if causal and not entry.causal:
        names = ", ".join(name for name in available() if _REGISTRY[name].causal)
        raise ValueError(f"attention {entry.name!r} has no causal form; the causal mode works with: {names}")
    return {"causal": True} if causal else {}


def build_attention(
    name: str,
    head_dim: int = 32,
    num_heads: int = 2,
    seq_len: int = 1024,
    dim: int | None = None,
    causal: bool = False,
    **options: Any,
) -> nn.Module:
    """Build the core or mixer ``name`` from the model's shapes and its options.

    A core: ``core(q, k, v, mask) -> out``, q, k, v and out (batch, heads, seq, head_dim). A mixer
    (built from ``dim``, the model width, default ``head_dim * num_heads``, and ``seq_len``):
    ``mixer(x, mask) -> out``, x and out (batch, seq, dim). mask: (batch, seq) bool, True = real
    token, or None. ``causal``: output position t depends on positions <= t only (``supports_causal``).
    Unknown names or options, values their annotation rejects, and ``causal=True`` for an entry
    without a causal form raise ``ValueError``.
    """
    entry = spec(name)
    shapes = {"dim": head_dim * num_heads if dim is None else dim, "head_dim": head_dim}
    shapes |= {"num_heads": num_heads, "seq_len": seq_len}
    arguments = entry.checked({**{shape: shapes[shape] for shape in entry.shapes}, **options})
    return entry.cls(**arguments, **checked_causal(entry, causal))


def spec_of(module: nn.Module) -> AttentionSpec | None:
    """The registry entry whose class ``module`` is an instance of (exactly), or None."""
    return next((entry for entry in _REGISTRY.values() if type(module) is entry.cls), None)


def is_mixer(module: nn.Module) -> bool:
    """Whether ``module`` is a registered mixer (it replaces multi-head attention), not a core."""
    entry = spec_of(module)
    return entry is not None and entry.mixer


def tie_layers(cores: Sequence[nn.Module]) -> None:
    """Let the cores of a model's layers (in layer order, built with the same options) share what
    their options say is shared across layers: each later core that defines ``tie_to(first)``
    (``linformer`` with ``share_layers``) is handed the first layer's core. Other cores are left as
    they are, so a model calls this once, whatever its attention.
    """
    for core in cores[1:]:
        tie_to = getattr(core, "tie_to", None)
        if tie_to is not None:
            tie_to(cores[0])
