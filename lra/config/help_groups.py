"""The config groups that ``python -m lra --help`` lists (``${lra.config_groups:}`` in
conf/hydra/help/lra.yaml): those a user picks on the command line.

A group that conf/config.yaml's defaults list selects from other choices (``experiment_attention``
by ``${experiment}/${attention}``, ``pretrain_task``, ``search_space``) is left out: a user never
names it, and its options are the choices of the groups it follows.

The help template is a string of the ``hydra`` node, which Hydra's composition dereferences at
several of its merges, so the listing (which lists every group's options) is made once per process.
"""

from __future__ import annotations

import functools
from pathlib import Path

from hydra.core.global_hydra import GlobalHydra
from omegaconf import OmegaConf

from lra.config.paths import CONFIG_DIR

DEFAULT_PREFIXES = ("optional ", "override ")


def derived_groups(config_file: Path = Path(CONFIG_DIR) / "config.yaml") -> set[str]:
    """The groups whose option the defaults list interpolates: ``{"experiment_attention", ...}``."""
    defaults = OmegaConf.to_container(OmegaConf.load(config_file).defaults, resolve=False)
    groups = set()
    for entry in defaults:
        if isinstance(entry, dict):
            for key, option in entry.items():
                if "${" in str(option):
                    for prefix in DEFAULT_PREFIXES:
                        key = key.removeprefix(prefix)
                    groups.add(key.split("@", 1)[0])
    return groups


@functools.cache
def user_config_groups() -> str:
    """One line per group a user picks, ``group: option, option, ...``, as Hydra's help writes them."""
    hidden = derived_groups()

    def picked_by_the_user(group: str) -> bool:
        return not any(group == top or group.startswith(f"{top}/") for top in {*hidden, "hydra"})

    return GlobalHydra.instance().hydra.format_config_groups(picked_by_the_user).rstrip("\n")
