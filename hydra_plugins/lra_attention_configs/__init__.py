"""A Hydra search-path plugin: the ``conf/`` folder of every package with an ``lra.attentions`` entry point.

A package that registers an attention through the entry point group (``attention_zoo.plugins``) ships
its config as ``<package>/conf/attention/<name>.yaml``; this plugin appends ``pkg://<package>.conf`` to
the config search path, so ``python -m lra attention=<name>`` finds it. The harness's own ``conf/``
comes first, so a package cannot replace a built-in config. Hydra imports every module under
``hydra_plugins`` in any Hydra app, so this one reads package metadata only (no torch, no import of
the packages).
"""

from __future__ import annotations

from importlib.metadata import entry_points

from hydra.core.config_search_path import ConfigSearchPath
from hydra.plugins.search_path_plugin import SearchPathPlugin

ENTRY_POINT_GROUP = "lra.attentions"  # attention_zoo.plugins.ENTRY_POINT_GROUP


def attention_config_paths() -> list[str]:
    """``pkg://<top-level package>.conf`` of each entry point of the group, each package once."""
    packages = [entry_point.module.split(".")[0] for entry_point in entry_points(group=ENTRY_POINT_GROUP)]
    return [f"pkg://{package}.conf" for package in dict.fromkeys(packages)]


class AttentionConfigSearchPath(SearchPathPlugin):
    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        for path in attention_config_paths():
            search_path.append(provider=ENTRY_POINT_GROUP, path=path)
