"""The launchers of the harness's sweeps: Hydra's basic and joblib launchers, except that no job starts
after a SIGTERM or SIGINT and the sweep then ends with a table of what stopped and what did not start
(``lra.job.sweep_stop``).

- ``LocalLauncher`` (``hydra/launcher=local``, the default): the jobs one after another in this process;
- ``ParallelLauncher`` (``hydra/launcher=joblib``, the ``cluster`` extra): ``n_jobs`` jobs at a time in
  worker processes, with the joblib launcher's options (``conf/hydra/launcher/joblib.yaml`` is the
  joblib plugin's config of that name with this class as its target).

Hydra imports every module under ``hydra_plugins`` in any Hydra app: this one imports the harness only
when a sweep starts.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hydra._internal.core_plugins.basic_launcher import BasicLauncher
from hydra.core.utils import JobReturn
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig


class LocalLauncher(BasicLauncher):
    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        from lra.job.sweep_stop import one_by_one

        def launch_one(overrides: Sequence[str], number: int) -> Sequence[JobReturn]:
            return BasicLauncher.launch(self, [overrides], number)

        return one_by_one(job_overrides, initial_job_idx, launch_one, Path(str(self.config.hydra.sweep.dir)))


class ParallelLauncher(Launcher):
    def __init__(self, **options: Any) -> None:
        """``options``: the joblib launcher's (``n_jobs``, ``pre_dispatch``, ...), for ``joblib.Parallel``."""
        self.joblib = options
        self.config: DictConfig | None = None
        self.task_function: TaskFunction | None = None
        self.hydra_context: HydraContext | None = None

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.config, self.task_function, self.hydra_context = config, task_function, hydra_context

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        from lra.job.sweep_stop import in_parallel

        return in_parallel(self, job_overrides, initial_job_idx)
