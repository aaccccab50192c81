"""The recall tasks by name, and ``build``: a task from its name and options, checked."""

from __future__ import annotations

import numbers
from dataclasses import fields

from data_prep.recall.base import RecallTask
from data_prep.recall.induction import Induction
from data_prep.recall.mad_fuzzy import FuzzyInContextRecall
from data_prep.recall.mad_recall import InContextRecall, NoisyInContextRecall
from data_prep.recall.mad_sequences import Compression, Memorization, SelectiveCopying
from data_prep.recall.mqar import Mqar

TASKS: dict[str, type[RecallTask]] = {
    task.name: task
    for task in (
        Mqar,
        InContextRecall,
        FuzzyInContextRecall,
        NoisyInContextRecall,
        SelectiveCopying,
        Compression,
        Memorization,
        Induction,
    )
}

_KINDS = {
    "int": lambda v: isinstance(v, numbers.Integral) and not isinstance(v, bool),
    "float": lambda v: isinstance(v, numbers.Real) and not isinstance(v, bool),
    "bool": lambda v: isinstance(v, bool),
}


def options_of(name: str) -> dict[str, object]:
    """A task's options and their defaults."""
    return {f.name: f.default for f in fields(_task(name).Options)}


def build(name: str, **options: object) -> RecallTask:
    """The task ``name`` with ``options`` over its defaults; one ValueError line on bad input."""
    task = _task(name)
    kinds = {f.name: str(f.type) for f in fields(task.Options)}
    for key, value in options.items():
        if key not in kinds:
            raise ValueError(f"{name} has no option {key!r}: valid options are {', '.join(kinds)}")
        if not _KINDS[kinds[key]](value):
            raise ValueError(
                f"{name}: {key}={value!r} is not {kinds[key]}: valid values are of type {kinds[key]}"
            )
    cast = {key: float(value) if kinds[key] == "float" else value for key, value in options.items()}
    return task(task.Options(**cast))


def _task(name: str) -> type[RecallTask]:
    if name not in TASKS:
        raise ValueError(f"unknown recall task {name!r}: valid tasks are {', '.join(TASKS)}")
    return TASKS[name]
