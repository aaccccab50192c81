"""The LRA harness: ``python -m lra task=T attention=A [overrides]`` (Hydra × Lightning).

The job: ``__main__`` (the Hydra entry) hands each composed config to ``train`` (check, plan, build,
fit, test) with ``checks``/``errors`` (config validation), ``resume`` (where a run trains),
``checkpoint_files`` (atomic, stamped, verified checkpoints), ``run_lock`` (one writer per run
folder), ``disk_full``, ``csv_metrics``, ``model``,
``module``, ``data``, ``schedules``, ``callbacks``, ``loggers``, ``training_state`` (exact resume),
``preemption`` (SLURM requeue), ``agreed_stop`` (every process stops at one step on SIGTERM/SIGINT),
``sweep_stop`` (a signalled sweep starts no job), ``stop_signals`` (SIGTERM/SIGINT noted or held back),
``rank_plan`` (one run plan for every DDP process), ``naming``, ``memory``, ``extras`` (the optional
parts and their extras); ``job_state`` and ``job_end`` record the outcome in summary.json (``summary_json``;
``summary_tables`` prints it). They import attention_zoo, data_prep, Lightning, Hydra.
Above them sit ``report`` (tables and figures of finished runs), ``bench`` (benchmarks) and
``search`` (Optuna); ``report`` and ``bench`` never import each other and share only ``provenance``,
``published_numbers`` and ``plotting``. Nothing imports ``__main__``; importing ``lra`` registers
the ``lra.*`` OmegaConf resolvers (``resolvers``).
"""

from lra.job.resolvers import register_resolvers

register_resolvers()
