"""Which top-level shortcut set a key: an error about a value the user never typed names what they did.

``features=128`` sets every approximate attention's budget option through ``${lra.budget:DEFAULT}``
(``lra.job.resolvers``); a check that finds ``attention.num_landmarks=128`` too large says
``features=128 sets attention.num_landmarks=128, which exceeds ...``. ``SHORTCUTS`` maps a resolver to
the top-level key that drives it.
"""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig, OmegaConf

from lra.job.resolvers import BUDGET_RESOLVER

SHORTCUTS = {BUDGET_RESOLVER: "features"}


def shortcut_of(raw: DictConfig, key: str) -> str | None:
    """The ``key=value`` of the shortcut that sets ``key`` in the unresolved config ``raw``, or None
    when ``key`` holds its own value (or a shortcut that is not set, leaving its default)."""
    parent_key, _, leaf = key.rpartition(".")
    parent = OmegaConf.select(raw, parent_key) if parent_key else raw
    if not isinstance(parent, DictConfig) or leaf not in parent:
        return None
    node = parent._get_node(leaf)
    if node is None or not node._is_interpolation():
        return None
    text = str(node._value())
    for resolver, shortcut in SHORTCUTS.items():
        value = raw.get(shortcut)
        if f"${{{resolver}:" in text and value is not None:
            return f"{shortcut}={value}"
    return None


def subject(raw: DictConfig, key: str, value: Any) -> str:
    """How an error names ``key=value``: ``attention.num_landmarks=128``, or ``features=128 sets
    attention.num_landmarks=128, which`` when a shortcut set it (the error's verb follows)."""
    shortcut = shortcut_of(raw, key)
    return f"{key}={value}" if shortcut is None else f"{shortcut} sets {key}={value}, which"
