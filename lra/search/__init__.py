"""Hyperparameter search with Optuna through Hydra (``hparams_search=lra``, docs/tuning.md).

- ``study``: the study's name, storage and trial counts;
- ``sweeper``: the sweep loop of ``hydra/sweeper=lra_optuna`` (trials in total, failed trials, heartbeats);
- ``best``: ``best.yaml``, the best trial's values as a ``+best=PATH`` override.

``hydra_plugins/lra_optuna_sweeper`` is the Hydra plugin that hands the sweep to ``sweeper``.
"""
