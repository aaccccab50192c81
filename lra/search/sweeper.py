"""The sweep of ``hydra/sweeper=lra_optuna``: Optuna's ask-and-tell loop over Hydra's launcher, which

- reaches ``n_trials`` in total: a study started again (same command, same storage) runs only the trials
  it still lacks, and workers sharing one study (a journal file or a database) stop together, with
  exactly ``n_trials`` (``lra.search.trials.within_total``);
- once it has no trial left to start, waits for the trials still running in other workers, polling every
  ``heartbeat_s``: a dead worker's trial (its heartbeats stopped) is queued again and run here, so the
  study ends with ``n_trials`` completed, or its last line names the trials that failed and why;
- records a trial whose run failed, returned NaN or raised as failed, with the reason, and goes on;
- queues an interrupted trial's parameters again (Ctrl+C, SIGTERM, a launcher whose job died, a worker
  whose heartbeats stopped), so that with ``resume=auto`` the run continues; a trial whose job died
  runs again at most ``max_retries`` times, then is recorded as failed;
- writes ``best.yaml`` (``lra.search.best``) at the end, when no trial runs any more.

The search space (``lra.search.space``) and the storage are checked before any trial runs: a problem
is one line and exit 1.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import optuna
from hydra.core.plugins import Plugins
from hydra.core.utils import JobReturn
from hydra.plugins.sweeper import Sweeper
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf
from optuna.distributions import BaseDistribution
from optuna.trial import TrialState

from lra.config.errors import ConfigError
from lra.config.naming import STUDY_ENV, SWEPT_KEYS_ENV
from lra.results.refused_jobs import refused_error
from lra.results.summary_json import job_summary_file
from lra.search.best import BEST_FILE, tuned_command, write_best
from lra.search.sampler import TrialSeeded
from lra.search.space import clip_to_task, search_space
from lra.search.storage import heartbeats, open_storage
from lra.search.study import (
    STUDY_FILE,
    check_fixed_task_and_attention,
    fixed_options,
    study_name,
    trained_params,
)
from lra.search.trials import (
    DIED,
    ERROR_ATTR,
    RETRIES_ATTR,
    RUN_DIR_ATTR,
    STOPPED,
    counts_toward_total,
    fail_stale_trials,
    failures_line,
    interrupt,
    skip,
    trial_counts,
    within_total,
)

log = logging.getLogger(__name__)
NOT_A_KEY = object()
TASK_SPACE_CHOICE = "search_space/task@hydra.sweeper.params"  # conf/config.yaml
Space = dict[str, BaseDistribution]


@dataclass(eq=False)
class StudySweeper(Sweeper):
    """The keys of ``conf/hydra/sweeper/lra_optuna.yaml``; ``sampler`` a partial that takes ``seed``."""

    sampler: Any
    direction: str
    storage: str | None
    study_name: str | None
    n_trials: int
    n_jobs: int
    params: Any
    heartbeat_s: int
    max_retries: int

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.config = config
        self.hydra_context = hydra_context
        self.launcher = Plugins.instance().instantiate_launcher(
            hydra_context=hydra_context, task_function=task_function, config=config
        )

    def check_settings(self) -> None:
        """Each ``hydra.sweeper`` setting within its range; a ``ConfigError`` naming the first that is not."""
        if not isinstance(self.sampler, functools.partial):
            raise ConfigError("hydra.sweeper.sampler needs _partial_: true (the search seeds it per trial)")
        for key, low in (("n_trials", 1), ("n_jobs", 1), ("heartbeat_s", 1), ("max_retries", 0)):
            if getattr(self, key) < low:
                raise ConfigError(f"hydra.sweeper.{key}={getattr(self, key)} is invalid: it must be >= {low}")

    def sweep(self, arguments: list[str]) -> None:
        try:
            self.check_settings()
            space, fixed = self.sampled_space(arguments)
            study = self.open_study()
        except ConfigError as error:
            print(f"lra: {error}", file=sys.stderr, flush=True)
            sys.exit(1)
        self.run_trials(study, space, fixed)
        self.report(study)

    def sampled_space(self, arguments: list[str]) -> tuple[Space, dict[str, str]]:
        """The sampled distributions and the fixed overrides: ``hydra.sweeper.params``, then the command
        line (a plain ``key=value`` there fixes a key, ``key=interval(...)`` replaces its range)."""
        check_fixed_task_and_attention(arguments)
        if TASK_SPACE_CHOICE not in self.config.hydra.runtime.choices:
            raise ConfigError(
                f"no search space for task={self.config.task.name}: conf/search_space/task/"
                f"{self.config.hydra.runtime.choices.get('hparams_search')}/{self.config.task.name}.yaml"
            )
        params = [f"{key}={value}" for key, value in (self.params or {}).items()]
        space, fixed = search_space([*params, *arguments])
        unknown = [key for key in space if OmegaConf.select(self.config, key, default=NOT_A_KEY) is NOT_A_KEY]
        if unknown:
            raise ConfigError(
                f"the search space samples {', '.join(unknown)}, not a key of the config of "
                f"task={self.config.task.name} attention={self.config.attention.name}"
            )
        if not space:
            raise ConfigError("the search space is empty: hparams_search=lra, or key=interval(a,b) options")
        os.environ[SWEPT_KEYS_ENV] = " ".join(space)  # trials are named with their sampled values
        return clip_to_task(space, self.config), fixed

    def open_study(self) -> optuna.Study:
        config = self.config
        overrides = list(config.hydra.overrides.task)
        name = self.study_name or study_name(config.task.name, config.attention.name, config.seed, overrides)
        os.environ[STUDY_ENV] = name
        if self.storage is None:
            sweep_dir = Path(self.config.hydra.sweep.dir)
            sweep_dir.mkdir(parents=True, exist_ok=True)
            self.storage = f"sqlite:///{sweep_dir / STUDY_FILE}"
        self.storage_backend = open_storage(self.storage)
        study = optuna.create_study(
            study_name=name,
            storage=self.storage_backend,
            sampler=TrialSeeded(self.sampler, self.sampler.keywords.get("seed")),
            direction=self.direction,
            load_if_exists=True,
        )
        counts = trial_counts(study.get_trials(deepcopy=False))
        log.info(f"Study {name} in {self.storage}: {counts}, {self.n_trials} trials in total")
        return study

    def trials_to_go(self, study: optuna.Study) -> int:
        # A dead worker's trials: interrupted, queued again.
        fail_stale_trials(study, self.storage_backend, self.heartbeat_s)
        return self.n_trials - sum(map(counts_toward_total, study.get_trials(deepcopy=False)))

    def ask(self, study: optuna.Study, space: Space, count: int) -> list[optuna.trial.Trial]:
        """Up to ``count`` new trials with their values drawn (or a queued trial's values); a trial past
        ``n_trials`` (another worker asked at the same moment) is skipped."""
        trials = []
        for _ in range(count):
            trial = study.ask(fixed_distributions=space)
            if not within_total(study, self.frozen(trial), self.n_trials):
                skip(study, self.storage_backend, self.frozen(trial))
                continue
            if RETRIES_ATTR not in trial.user_attrs:
                trial.set_user_attr(RETRIES_ATTR, self.max_retries)
            trials.append(trial)
        return trials

    def frozen(self, trial: optuna.trial.Trial) -> optuna.trial.FrozenTrial:
        return self.storage_backend.get_trial(trial._trial_id)  # Optuna's storage id of the trial

    def run_trials(self, study: optuna.Study, space: Space, fixed: dict[str, str]) -> None:
        """Start trials while the study lacks some, then wait while other workers' trials run (the
        module docstring): each poll re-queues the stale ones, which this worker then runs."""
        waiting_for: list[int] = []
        while True:
            to_go = self.trials_to_go(study)
            if to_go > 0:
                self.run_batch(study, space, fixed, min(self.n_jobs, to_go))
                continue
            running = [t.number for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))]
            if not running:
                return
            if running != waiting_for:
                numbers = ", ".join(map(str, running))
                log.info(
                    f"Waiting for trial(s) {numbers} of other workers; one whose heartbeats stop runs here"
                )
                waiting_for = running
            time.sleep(self.heartbeat_s)

    def run_batch(self, study: optuna.Study, space: Space, fixed: dict[str, str], count: int) -> None:
        """Ask for up to ``count`` trials, run them through the launcher and tell their outcomes."""
        trials = self.ask(study, space, count)
        if not trials:
            return
        overrides = [
            (*(f"{key}={value}" for key, value in trained_params(trial.params).items()), *fixed.values())
            for trial in trials
        ]
        ids = [trial._trial_id for trial in trials]  # Optuna's storage ids
        try:
            with heartbeats(self.storage_backend, ids, self.heartbeat_s):
                returns = self.launcher.launch(overrides, initial_job_idx=trials[0].number)
        except Exception as error:  # a job died: its launcher (submitit, joblib) raised
            reason = f"its job died: {type(error).__name__}: {error}".splitlines()[0]
            self.interrupt_all(study, trials, DIED, reason)
            return
        except BaseException:  # Ctrl+C, SIGTERM: the trials run again next time
            self.interrupt_all(study, trials, STOPPED, "the search was stopped")
            raise
        for trial, job in zip(trials, returns, strict=True):
            tell(study, trial, job)

    def interrupt_all(
        self, study: optuna.Study, trials: Sequence[optuna.trial.Trial], cause: str, why: str
    ) -> None:
        for trial in trials:
            interrupt(study, self.storage_backend, self.frozen(trial), cause, why)

    def report(self, study: optuna.Study) -> None:
        """Log the trial counts, the failed trials in one line, and the best trial, and write ``best.yaml``
        (when a trial completed)."""
        trials = study.get_trials(deepcopy=False)
        counts = trial_counts(trials)
        log.info(f"Study {study.study_name}: {counts}")
        if failed := failures_line(trials):
            completed = f"{counts['completed']} of {self.n_trials} trials completed"
            log.warning(f"Study {study.study_name}: {completed}; failed: {failed}")
        if not counts["completed"]:
            log.warning("No trial completed: no best.yaml")
            return
        best = study.best_trial
        path = Path(self.config.hydra.sweep.dir) / BEST_FILE
        task, attention = self.config.task.name, self.config.attention.name
        fixed = fixed_options(list(self.config.hydra.overrides.task))
        write_best(
            path,
            {
                "study": study.study_name,
                "storage": self.storage,
                "task": task,
                "attention": attention,
                "value": best.value,
                "trial": best.number,
                "params": trained_params(best.params),
                "run_dir": best.user_attrs.get(RUN_DIR_ATTR),
                "command": tuned_command(task, attention, fixed, path),
            },
        )
        log.info(f"Best val/acc_best {best.value:.4f} (trial {best.number}): {trained_params(best.params)}")
        log.info(f"Wrote {path}; train it: {tuned_command(task, attention, fixed, path)}")


def job_outcome(job: JobReturn) -> tuple[float, str | None, str | None]:
    """(value, error, run folder) of a finished job: the value it returned, or NaN with why."""
    output_dir = Path(job.hydra_cfg.hydra.runtime.output_dir)
    summary_file = job_summary_file(output_dir)
    run_dir = str(summary_file.parent) if summary_file else str(output_dir)
    try:
        value = float(job.return_value)
    except Exception as error:  # the job raised (Hydra re-raises it here) or returned no number
        return math.nan, f"{type(error).__name__}: {error}".splitlines()[0], run_dir
    if math.isfinite(value):
        return value, None, run_dir
    if summary_file is None:
        refused = refused_error(output_dir.parent, job.hydra_cfg.hydra.job.num)  # the sweep's folder
        return math.nan, f"refused: {refused}" if refused else f"returned {value}", run_dir
    summary = json.loads(summary_file.read_text())
    return math.nan, f"{summary['status']}: {summary['error']}", run_dir


def tell(study: optuna.Study, trial: optuna.trial.Trial, job: JobReturn) -> None:
    """Record a finished job's outcome on its trial (unless another worker judged the trial lost and
    finished it meanwhile: then it is logged)."""
    value, error, run_dir = job_outcome(job)
    try:
        trial.set_user_attr(RUN_DIR_ATTR, run_dir)
        if error is None:
            study.tell(trial, value)
            return
        trial.set_user_attr(ERROR_ATTR, error)
        study.tell(trial, state=TrialState.FAIL)
        log.warning(f"Trial {trial.number} failed: {error}")
    except (optuna.exceptions.UpdateFinishedTrialError, ValueError):  # ValueError: "Cannot tell a ..."
        log.warning(f"Trial {trial.number} was finished by another worker while it ran; its run: {run_dir}")
