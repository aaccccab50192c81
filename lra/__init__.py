"""The LRA harness: ``python -m lra task=T attention=A [overrides]`` (Hydra × Lightning).

Modules:

- ``__main__`` (the Hydra entry), ``train`` (one job, start to end), ``checks`` and ``errors``
  (config validation), ``resolvers`` (the ``lra.*`` interpolations of conf/);
- ``model`` (the shared encoder), ``module`` (the LightningModule), ``data`` (the datamodule),
  ``callbacks`` (perf metrics), ``loggers``, ``resume`` (where a run trains and what it continues),
  ``training_state`` (the loader position and RNG states in checkpoints), ``preemption`` (SLURM
  requeue through submitit), ``naming`` (job names with the options a sweep varies), ``memory``
  (process RSS, no torch), ``summary`` (summary.json and the final table);
- ``runs`` (finished runs as the report reads them), ``report`` (the LRA table of finished runs),
  ``progress`` (a sweep's jobs by state),
  ``published`` (the papers' numbers), ``provenance`` (machine, rerun command and tables of a
  result), ``bench`` (efficiency and fidelity benchmarks);
- ``search`` (the Optuna search of ``hparams_search=lra``: study, trial loop, best.yaml) and
  ``studies`` (the report's section on searches).

Importing ``lra`` registers the ``lra.*`` OmegaConf resolvers that ``conf/`` uses.
"""

from lra.resolvers import register_resolvers

register_resolvers()
