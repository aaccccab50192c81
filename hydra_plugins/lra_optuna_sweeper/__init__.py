"""The Hydra sweeper of ``hparams_search=lra`` (``hydra/sweeper=lra_optuna``): Optuna through
hydra-optuna-sweeper, with the trial loop of ``lra.search.sweeper``.

Hydra imports every module under ``hydra_plugins`` in any Hydra app, and only sweeper plugins found
there can be instantiated: this module imports Optuna and the harness only when a search starts, so a
checkout without the ``search`` extra runs everything else.
"""

from __future__ import annotations

import logging
from typing import Any

from hydra.plugins.sweeper import Sweeper
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig

# Importing Optuna (the sampler's config does, before this sweeper starts) imports alembic, whose import
# logs a line per alembic plugin at INFO on Hydra's console.
logging.getLogger("alembic").setLevel(logging.WARNING)


class LRAOptunaSweeper(Sweeper):
    def __init__(
        self,
        sampler: Any,
        direction: str,
        storage: str | None,
        study_name: str | None,
        n_trials: int,
        n_jobs: int,
        params: DictConfig | None,
        heartbeat_s: int,
    ) -> None:
        from lra.search.sweeper import StudySweeper

        self.sweeper = StudySweeper(
            sampler, direction, storage, study_name, n_trials, n_jobs, params, heartbeat_s
        )

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.sweeper.setup(hydra_context=hydra_context, task_function=task_function, config=config)

    def sweep(self, arguments: list[str]) -> Any:
        return self.sweeper.sweep(arguments)
