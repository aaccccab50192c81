"""A search's study: its name (task, attention, the options the search keeps fixed and the seed) and the
files it is stored in.

The study name is computed from the command line, less the keys the search samples (handed to the jobs
in ``LRA_SWEPT_KEYS``, ``lra.config.naming``), so the sweep folder ``multirun/search/<study>`` and the study
are the same for the same command, in the sweeper and in every trial. It is a run's name
(``lra.config.naming.run_name``) with the fixed options: a command that trains anything else (another seed,
preset, task, attention or option) is another study.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lra.config.errors import ConfigError
from lra.config.naming import ALWAYS_NAMED, IGNORED_KEYS, SWEPT_KEYS_ENV, parse, run_name

# Command-line keys that do not change what a trial computes, beside IGNORED_KEYS.
UNNAMED_KEYS = ("hparams_search", "logger", "trainer.enable_progress_bar")
STUDY_FILE = "optuna.db"  # the default storage: sqlite:///<sweep dir>/optuna.db
JOURNAL_SUFFIX = ".journal"  # hydra.sweeper.storage=PATH.journal: an Optuna journal file (lra.search.storage)


def trained_value(value: Any) -> Any:
    """The value a trial trains with for a sampled one: a float to 4 significant digits (readable folder
    names, and far finer than any sensitivity of the search), anything else as drawn."""
    return float(f"{value:.4g}") if isinstance(value, float) else value


def trained_params(params: dict[str, Any]) -> dict[str, Any]:
    """``trained_value`` of each of a trial's sampled parameters."""
    return {key: trained_value(value) for key, value in params.items()}


def fixed_options(overrides: Sequence[str]) -> dict[str, str]:
    """``{key: value}`` of the command line's plain overrides that change what a trial computes: the preset
    (``experiment=``) among them; not the task, attention or seed (named apart), not a sampled key, a path
    or a worker count."""
    sampled = set(os.environ.get(SWEPT_KEYS_ENV, "").split())
    skipped = {*ALWAYS_NAMED, *IGNORED_KEYS, *UNNAMED_KEYS, *sampled}
    return {
        override.key_or_group: override.get_value_element_as_str()
        for override in parse(overrides)
        if not override.is_sweep_override() and override.key_or_group not in skipped
    }


def study_name(task: str, attention: str, seed: int, overrides: Sequence[str]) -> str:
    """``listops-nystrom[-max_steps=2000...]-s0``: the ``${lra.study_name:...}`` resolver of the sweep
    folder."""
    return run_name(task, attention, seed, fixed_options([str(override) for override in overrides]))


def study_files(root: Path) -> list[str]:
    """The storage of every study under ``root``: each ``optuna.db`` as a sqlite URL, then each
    ``*.journal`` file as its path, in path order."""
    databases = [f"sqlite:///{path}" for path in sorted(root.rglob(STUDY_FILE))]
    return databases + [str(path) for path in sorted(root.rglob(f"*{JOURNAL_SUFFIX}"))]


def check_fixed_task_and_attention(overrides: Sequence[str]) -> None:
    """A study tunes one task × attention: a sweep over either is refused (one search per pair)."""
    swept = [
        o.key_or_group for o in parse(overrides) if o.is_sweep_override() and o.key_or_group in ALWAYS_NAMED
    ]
    if swept:
        raise ConfigError(
            f"a search tunes one task × attention with one seed; {', '.join(swept)} is swept: "
            f"run one search per value"
        )
