"""The Hydra sweeper of ``experiment=locality`` (``hydra/sweeper=lra_conditional``): Hydra's basic sweeper,
the cartesian product of ``params`` and the command line's sweeps, in which an override may apply only
where a config group has a given option.

``only_with: {attention.window: attention=window}`` drops ``attention.window=W`` from the jobs that choose
another attention (``standard`` has no such option), and a job that is then the same as an earlier one
runs once: ``attention=window,standard attention.window=8,16 seed=0,1`` is six jobs, not eight.
The keys ``params`` varies name the jobs as the command line's do (``lra.config.naming``).
"""

from __future__ import annotations

from typing import Any

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.override_parser.types import Override


def applies(job: list[str], key: str, condition: str) -> bool:
    """Whether ``key``'s override belongs in ``job`` (its ``key=value`` strings): ``condition``
    (``group=option``) holds there."""
    group, option = condition.split("=", 1)
    chosen = {item.split("=", 1)[0].lstrip("+~"): item.split("=", 1)[1] for item in job}
    return chosen.get(group) == option


def conditional_jobs(jobs: list[list[str]], only_with: dict[str, str]) -> list[list[str]]:
    """``jobs`` less each override whose ``only_with`` condition fails there, each distinct job once, in
    order."""
    kept: dict[tuple[str, ...], None] = {}
    for job in jobs:
        kept[
            tuple(
                item
                for item in job
                if (key := item.split("=", 1)[0].lstrip("+~")) not in only_with
                or applies(job, key, only_with[key])
            )
        ] = None
    return [list(job) for job in kept]


def conditional_batches(
    overrides: list[Override], only_with: dict[str, str], max_batch_size: int | None
) -> list[list[list[str]]]:
    """The basic sweeper's jobs of ``overrides`` (``conditional_jobs``) in batches of ``max_batch_size``
    (None: one batch)."""
    (jobs,) = BasicSweeper.split_arguments(overrides, None)
    jobs = conditional_jobs(jobs, only_with)
    size = max_batch_size or len(jobs)
    return [jobs[start : start + size] for start in range(0, len(jobs), size)]


class ConditionalSweeper(BasicSweeper):
    def __init__(
        self,
        max_batch_size: int | None = None,
        params: dict[str, str] | None = None,
        only_with: dict[str, str] | None = None,
    ) -> None:
        super().__init__(max_batch_size=max_batch_size, params=params)
        self.only_with = dict(only_with or {})

    def split_arguments(self, overrides: list[Override], max_batch_size: int | None) -> list[list[list[str]]]:
        return conditional_batches(overrides, self.only_with, max_batch_size)

    def sweep(self, arguments: list[str]) -> Any:
        from lra.config.naming import record_swept_keys

        record_swept_keys([*self._parse_config(), *arguments])  # name the jobs by params' keys too
        return super().sweep(arguments)
