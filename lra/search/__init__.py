"""Hyperparameter search with Optuna through Hydra (``hparams_search=lra``, docs/tuning.md).

- ``space``: the search space, Hydra override strings as Optuna distributions, clipped to the task;
- ``study``: the study's name and the files it is stored in;
- ``storage``: opening the storage (SQLAlchemy URL or journal file) and the trials' heartbeats;
- ``trials``: trial states as the search counts them, retries and skipped trials;
- ``sampler``: each trial's values drawn with ``seed + trial number``;
- ``sweeper``: the sweep loop of ``hydra/sweeper=lra_optuna``;
- ``best``: ``best.yaml``, the best trial's values as a ``+best=PATH`` override.

``hydra_plugins/lra_optuna_sweeper`` is the Hydra plugin that hands the sweep to ``sweeper``.
"""
