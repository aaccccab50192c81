"""What makes two runs the same job, and what a run folder records of it.

"The same job" is one definition, ``comparable``: the resolved config less ``IGNORED_KEYS``
(where and how a job executes, not what it computes; and ``pretrain`` for a run from scratch, so that
``pretrain=none`` names the same job as a config without that key); ``job_fingerprint`` is its short
hash, stored in ``run.json`` and ``summary.json``. A *configuration* is a job without its seed
(``configuration_fingerprint``): the report gives each one its row, and a rerun of a job replaces
the earlier run. ``job_record`` is what summary.json names the job
by; ``read_run_file`` and ``run_status`` read a run folder's ``run.json`` and summary.json status.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from lra.config.naming import IGNORED_KEYS, run_name, varied_options
from lra.results.summary_json import RUN_FILE, SUMMARY_FILE

__all__ = ["RUN_FILE"]  # where the job side and the readers import it from


def without_key(config: dict[str, Any], dotted: str) -> dict[str, Any]:
    """``config`` less the value at ``dotted`` (``trainer.enable_progress_bar``), where it has one."""
    head, _, rest = dotted.partition(".")
    if head not in config:
        return config
    if not rest:
        return {key: value for key, value in config.items() if key != head}
    inner = config[head]
    return {**config, head: without_key(inner, rest)} if isinstance(inner, dict) else config


def comparable(config: dict[str, Any]) -> dict[str, Any]:
    """A resolved config (plain dicts) without ``IGNORED_KEYS`` (nor ``pretrain`` for a run from
    scratch): two runs with equal ones compute the same thing."""
    if (config.get("pretrain") or {}).get("mode") == "none":
        config = without_key(config, "pretrain")
    for key in IGNORED_KEYS:
        config = without_key(config, key)
    return config


def resolved(config: dict[str, Any]) -> dict[str, Any]:
    """A recorded config with its interpolations resolved (a run that failed its checks records its
    config as composed); a value that cannot resolve here is left out, so that no reader shows a
    ``${...}``."""
    return resolved_node(OmegaConf.create(config))


def resolved_node(node: DictConfig) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key in node:
        child = node._get_node(key)
        try:
            found[key] = (
                resolved_node(child)
                if isinstance(child, DictConfig)
                else OmegaConf.to_container(child, resolve=True)
                if isinstance(child, ListConfig)
                else node[key]
            )
        except (OmegaConfBaseException, ValueError, KeyError, TypeError):  # not resolvable here: left out
            continue
    return found


def leaves(config: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"task.lr": 0.001, ...}``: a nested config's leaves by dotted key (lists as they are)."""
    found: dict[str, Any] = {}
    for key, value in config.items():
        if isinstance(value, dict) and value:
            found |= leaves(value, f"{prefix}{key}.")
        else:
            found[f"{prefix}{key}"] = value
    return found


def configuration_fingerprint(config: dict[str, Any]) -> str:
    """The fingerprint of a resolved config's job less its ``seed``: equal for the runs of one
    configuration, whatever their seeds."""
    return job_fingerprint(without_key(comparable(config), "seed"))


def job_fingerprint(config: dict[str, Any]) -> str:
    """The job's identity, equal for the same job whatever the folder or machine: the first 16 hex
    digits of the SHA-256 of ``config`` (``comparable``: the resolved config less
    ``IGNORED_KEYS``) written as JSON with sorted keys."""
    return hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()[:16]


def recorded_fingerprint(run_file: dict[str, Any]) -> str:
    """The fingerprint of the config a ``run.json`` records, by today's ``comparable`` (so that a
    run.json written before a key joined ``IGNORED_KEYS`` still names its job); the fingerprint it
    records where it has no config."""
    if "config" not in run_file:
        return run_file["fingerprint"]
    return job_fingerprint(comparable(run_file["config"]))


def comparable_overrides(job_overrides: Sequence[str]) -> list[str]:
    """A job's command-line overrides less those of ``IGNORED_KEYS``: what a re-run of its command repeats."""
    return sorted(o for o in job_overrides if o.lstrip("+~").split("=", 1)[0] not in IGNORED_KEYS)


def preset_of(job_overrides: Sequence[str]) -> str | None:
    """The paper preset the job trained under (``experiment=NAME``), None without one."""
    chosen = [o.split("=", 1)[1] for o in job_overrides if o.split("=", 1)[0].lstrip("+~") == "experiment"]
    return chosen[-1] if chosen else None


def job_record(config: dict[str, Any], job_overrides: Sequence[str], resolved: bool = True) -> dict[str, Any]:
    """What names the job in summary.json: its ``name`` and varied ``options`` (``lra.config.naming``),
    the keys its command line set (``overrides``, less ``IGNORED_KEYS``: what a report's label may
    name), the ``preset`` it trained under (``experiment=``) and the ``fingerprint`` of what it computes
    (this module; None when ``config``, the job's config as plain data, is not ``resolved``: the run
    fails on it and names the reason)."""
    options = varied_options(job_overrides, config.get("pretrain"))
    return {
        "name": run_name(config["task"]["name"], config["attention"]["name"], config["seed"], options),
        "options": options,
        "overrides": sorted({o.lstrip("+~").split("=", 1)[0] for o in comparable_overrides(job_overrides)}),
        "preset": preset_of(job_overrides),
        "fingerprint": job_fingerprint(comparable(config)) if resolved else None,
    }


def read_run_file(directory: Path) -> dict[str, Any] | None:
    try:
        return json.loads((directory / RUN_FILE).read_text())
    except (OSError, ValueError):
        return None


def run_status(directory: Path) -> str | None:
    """The status in the folder's summary.json; None when it has none (e.g. killed with SIGKILL)."""
    try:
        return json.loads((directory / SUMMARY_FILE).read_text())["status"]
    except (OSError, ValueError, KeyError):
        return None


def differing_keys(first: Any, second: Any, prefix: str = "") -> list[str]:
    """Dotted keys whose values differ between two nested dicts."""
    if not (isinstance(first, dict) and isinstance(second, dict)):
        return [] if first == second else [prefix or "<config>"]
    keys = sorted(set(first) | set(second))
    return [
        found for key in keys for found in differing_keys(first.get(key), second.get(key), f"{prefix}{key}.")
    ]
