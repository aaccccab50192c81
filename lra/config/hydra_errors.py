"""One line, with a suggestion, for each error that stops ``python -m lra`` before a job starts.

``one_line_errors(app)`` runs a ``@hydra.main`` app with ``HYDRA_FULL_ERROR`` set, so that Hydra
raises its errors instead of printing them, and turns each into one line from its structured fields:

- an unknown group option (``MissingConfigException``): the group's options, from the config
  repository, and the nearest one;
- a misspelt key (``ConfigCompositionException`` caused by omegaconf's ``ConfigKeyError``): the
  nearest keys of the node it was looked up in (and the config groups, at the top level);
- an override that does not parse (``OverrideParseException``);
- an output folder Hydra cannot create (an ``OSError`` naming it): the key that chooses another;
- any other error of Hydra's or omegaconf's: its first line.

Anything else is a bug, and keeps its traceback. A user who sets ``HYDRA_FULL_ERROR=1`` gets Hydra's
full traces, as Hydra documents.
"""

from __future__ import annotations

import difflib
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from hydra.core.global_hydra import GlobalHydra
from hydra.errors import (
    ConfigCompositionException,
    HydraException,
    MissingConfigException,
    OverrideParseException,
)
from omegaconf import DictConfig
from omegaconf.errors import ConfigAttributeError, ConfigKeyError, OmegaConfBaseException

from lra.config.errors import OutputFolderError
from lra.config.naming import parse

SWEEP_FLAGS = ("-m", "--multirun")
MISSING_KEY = (ConfigKeyError, ConfigAttributeError)  # what omegaconf raises for a key not in struct
GRAMMAR = "https://hydra.cc/docs/advanced/override_grammar/basic/"
ONE_MODE = "Only one of --run, --multirun, --cfg"  # Hydra's refusal of -m with --cfg


def nearest(word: str, candidates: Sequence[str]) -> list[str]:
    """Up to three of ``candidates`` closest to ``word`` (difflib's ratio of at least 0.6), best first."""
    return difflib.get_close_matches(word, list(candidates), n=3, cutoff=0.6)


def config_groups() -> list[str]:
    """The top-level config groups of the running app's config repository (empty before Hydra starts)."""
    if not GlobalHydra.instance().is_initialized():
        return []
    return list(GlobalHydra.instance().config_loader().list_groups(""))


def option_line(error: MissingConfigException) -> str:
    """``task=listop is not an option of task; valid: image, listops, ... (did you mean task=listops?)``."""
    group, _, option = error.missing_cfg_file.rpartition("/")
    options = list(error.options or [])
    if not group or not options:
        return str(error).splitlines()[0]
    near = nearest(option, options)
    hint = f" (did you mean {group}={near[0]}?)" if near else ""
    return f"{group}={option} is not an option of {group}; valid: {', '.join(options)}{hint}"


def key_line(error: ConfigKeyError | ConfigAttributeError) -> str:
    """``trainer.max_step is not a config key; did you mean trainer.max_steps?`` (or a key of that name
    one node deeper: ``task.num_kv_pairs`` -> ``task.generator.num_kv_pairs``), or the valid keys of its
    node when none is near."""
    parent, key, full_key = error.parent_node, str(error.key), str(error.full_key)
    prefix = full_key[: len(full_key) - len(key)]  # "trainer." for trainer.max_step
    keys = [str(name) for name in parent.keys()] if isinstance(parent, DictConfig) else []
    if not prefix:
        keys += [group for group in config_groups() if group not in keys]
    near = nearest(key, keys) or deeper(parent, key)
    if near:
        return f"{full_key} is not a config key; did you mean {' or '.join(prefix + name for name in near)}?"
    where = prefix.rstrip(".") or "the config"
    return f"{full_key} is not a config key; the keys of {where}: {', '.join(sorted(keys))}"


def deeper(parent: object, key: str) -> list[str]:
    """``generator.num_kv_pairs``: the keys named ``key`` in the nodes directly below ``parent``."""
    if not isinstance(parent, DictConfig):
        return []
    nodes = {str(name): parent._get_node(name) for name in parent.keys()}
    return [f"{name}.{key}" for name, node in nodes.items() if isinstance(node, DictConfig) and key in node]


def swept_group_hint(full_key: str, argv: Sequence[str]) -> str:
    """Where ``full_key`` lies in a config group the multirun ``argv`` sweeps (``-m attention=gla,retnet
    attention.use_short_conv=true``): Hydra composes the sweep's own config with the group's default
    before it expands the sweep, so the key was looked up there. ``++`` sets it in every job."""
    group = full_key.partition(".")[0]
    if group == full_key or not any(flag in argv for flag in SWEEP_FLAGS):
        return ""
    try:
        overrides = parse([arg for arg in argv if not arg.startswith("-")])
    except OverrideParseException:
        return ""
    swept = [o for o in overrides if o.key_or_group == group and o.is_sweep_override()]
    if not swept:
        return ""
    return (
        f" ({group} is swept here, and Hydra checks a key against the default {group} before the sweep:"
        f" ++{full_key}=VALUE sets it in every job)"
    )


def folder_line(error: OSError, sweep: bool) -> str:
    """The output folder Hydra could not create, and the key that chooses another."""
    return str(OutputFolderError.of(error, "hydra.sweep.dir=PATH" if sweep else "hydra.run.dir=PATH"))


def error_line(error: Exception, argv: Sequence[str]) -> str | None:
    """The one line for ``error`` raised by Hydra for the command line ``argv``; None for an error that
    is not the command line's (a bug: its traceback is kept)."""
    cause = error.__cause__
    if isinstance(error, MissingConfigException):
        return option_line(error)
    if isinstance(error, ConfigCompositionException) and isinstance(cause, MissingConfigException):
        return option_line(cause)
    if isinstance(error, ConfigCompositionException) and isinstance(cause, MISSING_KEY):
        return key_line(cause) + swept_group_hint(str(cause.full_key), argv)
    if isinstance(error, OverrideParseException):
        return f"cannot parse {error.override!r}: {str(error).splitlines()[0]} (the syntax: {GRAMMAR})"
    if isinstance(error, ValueError) and str(error).startswith(ONE_MODE):
        return f"{error}: --cfg shows one job's config, so leave out -m (python -m lra ... --cfg job)"
    if isinstance(error, OSError) and error.filename is not None:
        return folder_line(error, any(flag in argv for flag in SWEEP_FLAGS))
    if isinstance(error, HydraException | OmegaConfBaseException):  # another of Hydra's: its first line
        return str(error).strip().splitlines()[0]
    return None


def one_line_errors(app: Callable[[], Any], prog: str = "lra") -> Any:
    """Run ``app`` (a ``@hydra.main`` function, called without arguments); exit with ``prog: <line>``
    for an error of the command line (module docstring)."""
    if os.environ.get("HYDRA_FULL_ERROR") == "1":
        return app()
    before = os.environ.get("HYDRA_FULL_ERROR")
    os.environ["HYDRA_FULL_ERROR"] = "1"
    try:
        return app()
    except Exception as error:
        line = error_line(error, sys.argv[1:])
        if line is None:
            raise
        sys.exit(f"{prog}: {line}")
    finally:
        if before is None:
            del os.environ["HYDRA_FULL_ERROR"]
        else:
            os.environ["HYDRA_FULL_ERROR"] = before
