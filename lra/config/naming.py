"""Names that say what ran: ``{task}-{attention}[-{option}={value}...]-s{seed}``.

A sweep's job folders, W&B run names and final table name every option the sweep varies, so that
``attention.num_landmarks=8,16`` gives ``listops-nystrom-num_landmarks=8-s0`` and
``listops-nystrom-num_landmarks=16-s0`` instead of two ``listops-nystrom-s0``.

The swept keys are read from the multirun command line and the preset's ``hydra.sweeper.params`` (where
the command line sets one of those keys, its value wins) once, when the sweep starts
(``lra.results.summary_tables.SweepSummary.on_multirun_start`` calls ``record_swept_keys``), and handed to
every job through the environment variable ``LRA_SWEPT_KEYS``, which local, joblib and SLURM (submitit) jobs
inherit. Each job takes its own values of those keys from its overrides. Task, attention and seed
are in every name already; a single run varies nothing and is named ``{task}-{attention}-s{seed}``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from hydra.core.override_parser.overrides_parser import OverridesParser

SWEPT_KEYS_ENV = "LRA_SWEPT_KEYS"
ALWAYS_NAMED = ("task", "attention", "seed")
# Keys (dotted below the top level) that say how or where a run executes, or how it is shown, not
# what it computes: a run may resume with others, the report gives them one row (lra.job.run_identity),
# and a search's name leaves them out (lra.search.study).
IGNORED_KEYS = (
    "resume", "num_workers", "persistent_workers", "threads", "steady_heap", "data_root",
    "logger", "trainer.enable_progress_bar", "trainer.enable_model_summary", "tuning_axes",
    # defaults other keys read: the resolved trainer.max_steps is what ran, the attention's options hold
    # what features set, and summary.json's device says where it ran
    "task.max_steps", "features", "trainer.accelerator",
    "trainer.log_every_n_steps",
)  # fmt: skip
# The options of pretrain=masked: a run from scratch ignores them, and its name leaves them out.
PRETRAIN_OPTIONS = "pretrain."
# The hyperparameter search a trial belongs to (lra.search): its W&B runs are grouped by it.
STUDY_ENV = "LRA_STUDY"


def parse(overrides: Sequence[str]) -> list:
    return OverridesParser.create().parse_overrides([str(override) for override in overrides])


def swept_keys(overrides: Sequence[str]) -> list[str]:
    """The keys (or config groups) that a multirun's overrides sweep, less ``ALWAYS_NAMED``; where a key
    comes twice, its last override decides."""
    sweeps = {override.key_or_group: override.is_sweep_override() for override in parse(overrides)}
    return [key for key, swept in sweeps.items() if swept and key not in ALWAYS_NAMED]


def record_swept_keys(overrides: Sequence[str], preset_params: dict[str, Any] | None = None) -> None:
    """Hand the keys this multirun sweeps to its jobs (see the module docstring): ``preset_params``
    (``hydra.sweeper.params``: key -> sweep) first, then the command line's ``overrides``."""
    params = [f"{key}={value}" for key, value in (preset_params or {}).items()]
    os.environ[SWEPT_KEYS_ENV] = " ".join(swept_keys([*params, *overrides]))


def varied_options(job_overrides: Sequence[str], pretrain: Mapping[str, Any] | None = None) -> dict[str, str]:
    """``{key: value}`` of this job for each key its sweep varies (``LRA_SWEPT_KEYS``), in sweep order;
    for a run from scratch (its ``pretrain`` node's mode ``none``) without the ``pretrain.*`` options,
    which it ignores."""
    scratch = (pretrain or {}).get("mode") == "none"
    swept = os.environ.get(SWEPT_KEYS_ENV, "").split()
    values = {override.key_or_group: override.get_value_element_as_str() for override in parse(job_overrides)}
    return {
        key: values[key]
        for key in swept
        if key in values and not (scratch and key.startswith(PRETRAIN_OPTIONS))
    }


def short_keys(keys: Sequence[str]) -> dict[str, str]:
    """Each dotted key by its last part (``attention.num_landmarks`` -> ``num_landmarks``), unless two
    keys share that last part: then both keep their full key."""
    last = {key: key.rsplit(".", 1)[-1].rsplit("/", 1)[-1] for key in keys}
    shared = {part for part in last.values() if list(last.values()).count(part) > 1}
    return {key: key if part in shared else part for key, part in last.items()}


def options_label(options: dict[str, str]) -> str:
    """``num_landmarks=16-lr=0.001``: the varied options as a name part (no ``/`` in folder names)."""
    short = short_keys(list(options))
    return "-".join(f"{short[key]}={value}".replace("/", "_") for key, value in options.items())


def run_name(task: str, attention: str, seed: int, options: dict[str, str]) -> str:
    """``listops-nystrom-num_landmarks=16-s0``: what one run of a sweep computed."""
    label = options_label(options)
    return f"{task}-{attention}{'-' + label if label else ''}-s{seed}"


def job_name(
    task: str, attention: str, seed: int, job_overrides: Sequence[str], pretrain_mode: str | None = None
) -> str:
    """The ``${lra.job_name:...}`` resolver of ``hydra.sweep.subdir``: ``run_name`` of a job's overrides
    (``pretrain_mode``: the job's ``pretrain.mode``; ``none`` leaves its ``pretrain.*`` options out)."""
    return run_name(task, attention, seed, varied_options(job_overrides, {"mode": pretrain_mode}))


def run_group(task: str) -> str:
    """A run's W&B group: the study of a search trial (``LRA_STUDY``), else its task."""
    return os.environ.get(STUDY_ENV) or task


def attention_budget(attention: dict[str, Any]) -> int | None:
    """The value of the resolved attention node's budget option (landmarks, projection, features), or
    None."""
    import attention_zoo  # here: naming serves the config resolvers, which load before torch

    name = attention["name"]
    option = attention_zoo.spec(name).budget_option if name in attention_zoo.available() else None
    return None if option is None else attention.get(option)
