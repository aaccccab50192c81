"""The Hydra sweeper of ``hparams_search=lra`` (``hydra/sweeper=lra_optuna``): Optuna's ask-and-tell
loop of ``lra.search.sweeper``.

Hydra imports every module under ``hydra_plugins`` in any Hydra app, and only sweeper plugins found
there can be instantiated: this module imports Optuna and the harness only when a search starts, so a
checkout without the ``search`` extra runs everything else (``lra.config.extras`` names the extra when a
command needs it).
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
    def __init__(self, **settings: Any) -> None:
        """``settings``: the ``hydra/sweeper`` config's keys, which ``StudySweeper`` takes by name."""
        from lra.search.sweeper import StudySweeper

        self.sweeper = StudySweeper(**settings)

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.sweeper.setup(hydra_context=hydra_context, task_function=task_function, config=config)

    def sweep(self, arguments: list[str]) -> Any:
        return self.sweeper.sweep(arguments)
