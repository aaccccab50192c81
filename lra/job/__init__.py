"""One training job's life, from the composed config to summary.json.

- entry and resolving: ``train`` (``run``: the one function that receives the composed config),
  ``resolve`` (checks it with ``checks`` and ``shortcuts``, once, into ``lra.config.records``),
  ``resolvers`` (the ``${lra.*}`` resolvers the config tree uses);
- plan and identity: ``run_identity``, ``resume``, ``rank_plan``, ``run_lock``;
- stages: ``trainers``, ``callbacks``, ``training_state``, ``pretrain_stage``, ``loggers``,
  ``csv_metrics``, ``progress_bar``, ``console``, ``memory``;
- signals and files: ``agreed_stop``, ``preemption``, ``sweep_stop``, ``disk_full``, ``checkpoint_files``;
- outcome: ``job_state``, ``job_end``.

May import ``lra.config``, ``lra.data``, ``lra.model``, ``lra.results``, ``lra.search`` (the study
name a resolver gives) and ``attention_zoo``/``data_prep``; never ``lra.report`` or ``lra.bench``.
"""
