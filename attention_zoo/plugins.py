"""Attentions from other installed packages: the ``lra.attentions`` entry point group.

A package registers its cores by naming, in its pyproject.toml, a module that applies
``@register_attention`` when imported::

    [project.entry-points."lra.attentions"]
    theirs = "their_package.attention"

``import attention_zoo`` loads every such entry point after the built-in cores (``load_plugins``).
Its Hydra config (``their_package/conf/attention/theirs.yaml``) is found
by the search-path plugin in ``hydra_plugins/lra_attention_configs``.
"""

from __future__ import annotations

import logging
from importlib.metadata import EntryPoint, entry_points

from attention_zoo.registry import _REGISTRY

ENTRY_POINT_GROUP = "lra.attentions"
LOG = logging.getLogger(__name__)

# One line per entry point that was skipped, in load order (the config check repeats them).
SKIPPED: list[str] = []


def describe(entry_point: EntryPoint) -> str:
    """``entry point 'theirs = their_package.attention' of package their-package 1.0``."""
    dist = getattr(entry_point, "dist", None)
    package = f"package {dist.name} {dist.version}" if dist is not None else "an unknown package"
    return f"{ENTRY_POINT_GROUP} entry point '{entry_point.name} = {entry_point.value}' of {package}"


def load_entry_point(entry_point: EntryPoint) -> str | None:
    """Import one entry point; None when it loaded, else the one line that says why it was skipped
    (its registrations are rolled back, so the registry is as it was before)."""
    before = set(_REGISTRY)
    try:
        entry_point.load()
    except Exception as error:  # a plugin's import may fail in any way: none may stop the others
        for name in set(_REGISTRY) - before:
            del _REGISTRY[name]
        reason = f"{type(error).__name__}: {error}".splitlines()[0]
        return f"{describe(entry_point)} was skipped: {reason}"
    return None


def load_plugins() -> list[str]:
    """Load every ``lra.attentions`` entry point; returns (and logs) the lines of those skipped.

    One that fails to import, or registers a name that is already taken, is skipped with one warning
    line naming the entry point and its package; whatever it registered before failing is removed
    again, and every other attention stays available."""
    skipped = []
    for entry_point in entry_points(group=ENTRY_POINT_GROUP):
        problem = load_entry_point(entry_point)
        if problem is not None:
            LOG.warning(problem)
            skipped.append(problem)
    SKIPPED[:] = skipped
    return skipped
