"""A search's study: its name (task, attention and the options the search keeps fixed), its storage and
the state of its trials.

The study name is computed from the command line, less the keys the search samples (handed to the jobs
in ``LRA_SWEPT_KEYS``, ``lra.naming``), so the sweep folder ``multirun/search/<study>`` and the study are
the same for the same command, in the sweeper and in every trial.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from lra.errors import ConfigError
from lra.naming import ALWAYS_NAMED, IGNORED_KEYS, SWEPT_KEYS_ENV, options_label, parse

# Command-line keys that do not change what a trial computes, beside IGNORED_KEYS.
UNNAMED_KEYS = ("hparams_search", "logger")
STUDY_FILE = "optuna.db"  # the default storage: sqlite:///<sweep dir>/optuna.db
# User attributes of a trial: why it failed (a failed trial without one was interrupted: Ctrl+C, SIGTERM
# or a lost worker) and the folder its run trained in.
ERROR_ATTR = "error"
RUN_DIR_ATTR = "run_dir"


def trained_value(value: Any) -> Any:
    """The value a trial trains with for a sampled one: a float to 4 significant digits (readable folder
    names, and far finer than any sensitivity of the search), anything else as drawn."""
    return float(f"{value:.4g}") if isinstance(value, float) else value


def trained_params(params: dict[str, Any]) -> dict[str, Any]:
    """``trained_value`` of each of a trial's sampled parameters."""
    return {key: trained_value(value) for key, value in params.items()}


def fixed_options(overrides: Sequence[str]) -> dict[str, str]:
    """``{key: value}`` of the command line's plain overrides that change what a trial computes: not the
    task or attention (already in the name), not a sampled key, a path or a worker count."""
    sampled = set(os.environ.get(SWEPT_KEYS_ENV, "").split())
    skipped = {*ALWAYS_NAMED, *IGNORED_KEYS, *UNNAMED_KEYS, *sampled}
    return {
        override.key_or_group: override.get_value_element_as_str()
        for override in parse(overrides)
        if not override.is_sweep_override() and override.key_or_group not in skipped
    }


def study_name(task: str, attention: str, overrides: Sequence[str]) -> str:
    """``listops-nystrom[-max_steps=2000...]``: the ``${lra.study_name:...}`` resolver of the sweep folder."""
    label = options_label(fixed_options([str(override) for override in overrides]))
    return f"{task}-{attention}{'-' + label if label else ''}"


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


def was_interrupted(trial: Any) -> bool:
    from optuna.trial import TrialState

    return trial.state == TrialState.FAIL and ERROR_ATTR not in trial.user_attrs


def run_again(study: Any, trial: Any) -> None:
    """Queue an interrupted trial's parameters: the next trial trains them (and, with ``resume=auto``,
    continues the interrupted run from its last checkpoint)."""
    study.enqueue_trial(trial.params)


def open_storage(url: str, heartbeat_s: int = 60) -> Any:
    """The Optuna storage at ``url`` (SQLAlchemy URL); a ``ConfigError`` naming the URL when it cannot be
    opened. Each running trial beats every ``heartbeat_s`` seconds: one silent for three beats (its worker
    was killed or lost) is marked interrupted and queued again (``run_again``)."""
    import optuna

    try:
        return optuna.storages.RDBStorage(
            url, heartbeat_interval=heartbeat_s, grace_period=3 * heartbeat_s, failed_trial_callback=run_again
        )
    except Exception as error:  # SQLAlchemy and driver errors have no common base
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise ConfigError(f"cannot open the study storage {url}: {reason}") from None


def counts_toward_total(trial: Any) -> bool:
    """A trial that took one of the search's ``n_trials``: running, completed, pruned, or failed for a
    reason of its own (an interrupted trial runs again)."""
    from optuna.trial import TrialState

    return trial.state != TrialState.WAITING and not was_interrupted(trial)


def trial_counts(trials: Sequence[Any]) -> dict[str, int]:
    """``{"completed", "failed", "interrupted", "running"}``: how many trials of a study are in each state."""
    from optuna.trial import TrialState

    counts = dict.fromkeys(("completed", "failed", "interrupted", "running"), 0)
    for trial in trials:
        if trial.state == TrialState.COMPLETE:
            counts["completed"] += 1
        elif trial.state == TrialState.RUNNING:
            counts["running"] += 1
        elif trial.state == TrialState.FAIL:
            counts["interrupted" if was_interrupted(trial) else "failed"] += 1
    return counts
