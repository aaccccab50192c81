"""Every preset against its sources, not against its configs: each preset × task composes once, and every
element of the preset's table (``helpers.official_<preset>``: the official value, and the source file
and line it was read from) must equal the composed config's. A second test holds the tables complete:
every key that a preset's files set (``conf/experiment/<preset>.yaml``, ``conf/experiment_task/<preset>/
<task>.yaml`` and the mixer's ``<task>/<attention>.yaml`` of the preset's attention) has a row.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest
from conftest import CONF_DIR, compose_config
from helpers import official_amos, official_lra, official_rotary, official_s4
from omegaconf import OmegaConf

# preset -> (its table, its attention, the repository its sources are under)
PRESETS = {
    "lra": (official_lra.OFFICIAL, "standard", "google-research/long-range-arena lra_benchmarks"),
    "amos": (official_amos.OFFICIAL, "standard", "IdoAmos/not-from-scratch"),
    "s4": (official_s4.OFFICIAL, "s4d", "state-spaces/s4"),
    "rotary": (official_rotary.OFFICIAL, "standard", "pablomiralles22/long-transformers"),
}
CASES = [(preset, task) for preset, (table, *_) in PRESETS.items() for task in table]


@cache
def composed(preset: str, task: str) -> dict[str, Any]:
    """The resolved job config of ``experiment=<preset> task=<task>`` with the preset's attention."""
    attention = PRESETS[preset][1]
    cfg = compose_config([f"experiment={preset}", f"task={task}", f"attention={attention}"])
    return OmegaConf.to_container(cfg, resolve=True)


def element(config: dict[str, Any], path: str) -> Any:
    """The value at the dotted ``path`` of ``config``; a ``KeyError`` naming the path if absent."""
    value: Any = config
    for key in path.split("."):
        if not isinstance(value, dict) or key not in value:
            raise KeyError(f"{path} is not in the composed config")
        value = value[key]
    return value


def mismatches(preset: str, task: str) -> list[str]:
    """One line per element whose composed value is not the official one."""
    table, _, repository = PRESETS[preset]
    config = composed(preset, task)
    lines = []
    for path, (official, source) in table[task].items():
        got = element(config, path)
        if got != official or isinstance(got, bool) != isinstance(official, bool):
            lines.append(
                f"experiment={preset} task={task}: {path} is {got!r}, the official value is {official!r} "
                f"({repository}: {source})"
            )
    return lines


@pytest.mark.parametrize(("preset", "task"), CASES)
def test_every_element_is_its_sources(preset, task):
    found = mismatches(preset, task)
    assert not found, "\n".join(found)


def leaf_paths(node: Any, prefix: str = "") -> set[str]:
    """The dotted paths of ``node``'s leaves (a list is a leaf)."""
    if not isinstance(node, dict):
        return {prefix}
    return {path for key, value in node.items() for path in leaf_paths(value, f"{prefix}{key}.")}


def preset_files(preset: str, task: str) -> list[Path]:
    attention = PRESETS[preset][1]
    files = [
        CONF_DIR / "experiment" / f"{preset}.yaml",
        CONF_DIR / "experiment_task" / preset / f"{task}.yaml",
        CONF_DIR / "experiment_task" / preset / task / f"{attention}.yaml",
    ]
    return [file for file in files if file.exists()]


@pytest.mark.parametrize(("preset", "task"), CASES)
def test_the_table_has_every_key_the_preset_sets(preset, task):
    keys = set()
    for file in preset_files(preset, task):
        node = OmegaConf.to_container(OmegaConf.load(file))
        node.pop("defaults", None)
        keys |= {path.rstrip(".") for path in leaf_paths(node)}
    missing = sorted(keys - set(PRESETS[preset][0][task]))
    assert not missing, f"experiment={preset} task={task}: no official value for {', '.join(missing)}"
