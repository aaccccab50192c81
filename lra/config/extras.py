"""The optional parts of the harness and the extra of ``pyproject.toml`` that installs each: a command
that needs a missing one stops with one line that names its install command, before Hydra starts.

- ``search`` (Optuna): ``hparams_search=...``, ``hydra/sweeper=lra_optuna``, the report's study section;
- ``cluster`` (Hydra's submitit and joblib launchers): ``hydra/launcher=slurm|submitit_local|joblib``;
- ``postgres`` (psycopg): a study in PostgreSQL (``postgresql+psycopg://...``);
- ``dashboards`` (wandb-workspaces): ``python -m lra.report --wandb-workspace``.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import NamedTuple

from hydra.errors import HydraException

from lra.config.errors import ConfigError
from lra.config.naming import parse


class Extra(NamedTuple):
    """An extra of ``pyproject.toml``, a module that it installs, and whether ``make install`` installs it."""

    name: str
    module: str
    by_make_install: bool = True


SEARCH = Extra("search", "optuna")
SUBMITIT = Extra("cluster", "hydra_plugins.hydra_submitit_launcher")
JOBLIB = Extra("cluster", "hydra_plugins.hydra_joblib_launcher")
POSTGRES = Extra("postgres", "psycopg", by_make_install=False)
DASHBOARDS = Extra("dashboards", "wandb_workspaces")
# Command-line choices that need an extra: (config group, option, or None for any option) -> the extra.
CHOICES = {
    ("hparams_search", None): SEARCH,
    ("hydra/sweeper", "lra_optuna"): SEARCH,
    ("hydra/launcher", "slurm"): SUBMITIT,
    ("hydra/launcher", "submitit_local"): SUBMITIT,
    ("hydra/launcher", "submitit_slurm"): SUBMITIT,
    ("hydra/launcher", "joblib"): JOBLIB,
}


def install_hint(extra: Extra) -> str:
    command = f'pip install -e ".[{extra.name}]"'
    return f"{command} (or make install)" if extra.by_make_install else command


def require(extra: Extra, needed_by: str) -> None:
    """Import ``extra``'s module; a one-line ``ConfigError`` that names the extra and its install command
    when it cannot be imported."""
    try:
        importlib.import_module(extra.module)
    except ImportError as error:
        missing = error.name or extra.module
        raise ConfigError(
            f"{needed_by} needs the `{extra.name}` extra ({missing} is not installed): {install_hint(extra)}"
        ) from None


def check_command_line(argv: Sequence[str]) -> None:
    """``require`` the extra of every choice on a ``python -m lra`` command line that needs one.

    Hydra's own flags (``-m``, ``--cfg job``, ...) and anything that does not parse as an override are
    left to Hydra."""
    for word in argv:
        if word.startswith("-") or "=" not in word:
            continue
        try:
            (override,) = parse([word])
        except HydraException:
            continue
        option = None if override.is_sweep_override() else override.get_value_element_as_str()
        if override.is_delete() or option == "null":  # the part is switched off
            continue
        group = override.key_or_group
        extra = CHOICES.get((group, option)) or CHOICES.get((group, None))
        if extra is not None:
            require(extra, word)
