"""``TrialSeeded``: an Optuna sampler that draws each trial's values with a fresh sampler seeded with
``seed + trial number``.

One seed for the whole study would make a restarted study propose its first trials' values again, and
workers sharing a study would propose the same ones; trial numbers are unique in a study, so every
trial draws differently and the same trial number always draws alike. The sampler is rebuilt in
``before_trial``, which Optuna calls when a trial is created (``study.ask``), before any value is drawn.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from optuna import Study
from optuna.distributions import BaseDistribution
from optuna.samplers import BaseSampler
from optuna.trial import FrozenTrial, TrialState


class TrialSeeded(BaseSampler):
    def __init__(self, make: Callable[..., BaseSampler], seed: int | None) -> None:
        """``make(seed=...)`` builds the sampler (the ``hydra.sweeper.sampler`` config, a partial)."""
        self.make = make
        self.seed = seed
        self.sampler = make(seed=seed)

    def before_trial(self, study: Study, trial: FrozenTrial) -> None:
        self.sampler = self.make(seed=None if self.seed is None else self.seed + trial.number)
        self.sampler.before_trial(study, trial)

    def infer_relative_search_space(self, study: Study, trial: FrozenTrial) -> dict[str, BaseDistribution]:
        return self.sampler.infer_relative_search_space(study, trial)

    def sample_relative(
        self, study: Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        return self.sampler.sample_relative(study, trial, search_space)

    def sample_independent(
        self, study: Study, trial: FrozenTrial, param_name: str, param_distribution: BaseDistribution
    ) -> Any:
        return self.sampler.sample_independent(study, trial, param_name, param_distribution)

    def after_trial(
        self, study: Study, trial: FrozenTrial, state: TrialState, values: Sequence[float] | None
    ) -> None:
        self.sampler.after_trial(study, trial, state, values)

    def reseed_rng(self) -> None:
        self.sampler.reseed_rng()
