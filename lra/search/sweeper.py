"""The sweep of ``hydra/sweeper=lra_optuna``: hydra-optuna-sweeper's search space and trial
configuration, with a loop of its own that

- reaches ``n_trials`` in total: a study started again (same command, same storage) runs only the trials
  it still lacks, and several workers on one study stop together (each asks for a trial only while the
  study has fewer than ``n_trials``);
- records a trial whose run failed, returned NaN or raised as failed, with the reason, and goes on;
- marks a trial interrupted (Ctrl+C, SIGTERM, or a worker whose heartbeats stopped) and runs its
  parameters again, so that with ``resume=auto`` the interrupted run continues;
- writes ``best.yaml`` (``lra.search.best``) at the end.

The search space and the storage are checked before any trial runs: a problem is one line and exit 1.
"""

from __future__ import annotations

import json
import logging
import math
import os
import sys
import threading
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import optuna
from hydra.core.utils import JobReturn
from hydra_plugins.hydra_optuna_sweeper._impl import OptunaSweeperImpl, create_params_from_overrides
from omegaconf import OmegaConf

from lra.errors import ConfigError
from lra.naming import STUDY_ENV, SWEPT_KEYS_ENV
from lra.search.best import BEST_FILE, tuned_command, write_best
from lra.search.study import (
    ERROR_ATTR,
    RUN_DIR_ATTR,
    STUDY_FILE,
    check_fixed_task_and_attention,
    counts_toward_total,
    fixed_options,
    open_storage,
    run_again,
    study_name,
    trained_params,
    trial_counts,
)
from lra.summary_json import job_summary_file

log = logging.getLogger(__name__)
NOT_A_KEY = object()
TASK_SPACE_CHOICE = "search_space/task@hydra.sweeper.params"  # conf/config.yaml
# fail_stale_trials (Optuna >= 2.9) is marked experimental: the warning would repeat before every trial.
warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)


class StudySweeper(OptunaSweeperImpl):
    def __init__(
        self,
        sampler: Any,
        direction: str,
        storage: str | None,
        study_name: str | None,
        n_trials: int,
        n_jobs: int,
        params: Any,
        heartbeat_s: int,
    ) -> None:
        super().__init__(sampler, direction, storage, study_name, n_trials, n_jobs, 1.0, None, None, params)
        self.heartbeat_s = heartbeat_s

    def sweep(self, arguments: list[str]) -> None:
        try:
            study, space, fixed = self.open_study(arguments)
        except ConfigError as error:
            print(f"lra: {error}", file=sys.stderr, flush=True)
            sys.exit(1)
        self.run_trials(study, space, fixed)
        self.report(study)

    def sampled_space(self, arguments: list[str]) -> tuple[dict[str, Any], dict[str, str]]:
        """The sampled distributions and the fixed values: ``hydra.sweeper.params``, then the command
        line (a plain ``key=value`` there fixes a key, ``key=interval(...)`` replaces its range)."""
        check_fixed_task_and_attention(arguments)
        if TASK_SPACE_CHOICE not in self.config.hydra.runtime.choices:
            raise ConfigError(
                f"no search space for task={self.config.task.name}: conf/search_space/task/"
                f"{self.config.hydra.runtime.choices.get('hparams_search')}/{self.config.task.name}.yaml"
            )
        overrides = [*self._parse_sweeper_params_config(), *arguments]
        space, fixed = create_params_from_overrides(overrides)
        space = {key: distribution for key, distribution in space.items() if key not in fixed}
        unknown = [key for key in space if OmegaConf.select(self.config, key, default=NOT_A_KEY) is NOT_A_KEY]
        if unknown:
            raise ConfigError(
                f"the search space samples {', '.join(unknown)}, not a key of the config of "
                f"task={self.config.task.name} attention={self.config.attention.name}"
            )
        if not space:
            raise ConfigError("the search space is empty: hparams_search=lra, or key=interval(a,b) options")
        os.environ[SWEPT_KEYS_ENV] = " ".join(space)  # trials are named with their sampled values
        return space, fixed

    def open_study(self, arguments: list[str]) -> tuple[optuna.Study, dict[str, Any], dict[str, str]]:
        space, fixed = self.sampled_space(arguments)
        name = self.study_name or study_name(
            self.config.task.name, self.config.attention.name, list(self.config.hydra.overrides.task)
        )
        os.environ[STUDY_ENV] = name
        if self.storage is None:
            sweep_dir = Path(self.config.hydra.sweep.dir)
            sweep_dir.mkdir(parents=True, exist_ok=True)
            self.storage = f"sqlite:///{sweep_dir / STUDY_FILE}"
        self.storage_backend = open_storage(self.storage, self.heartbeat_s)
        study = optuna.create_study(
            study_name=name, storage=self.storage_backend, direction=self.direction, load_if_exists=True
        )
        counts = trial_counts(study.get_trials(deepcopy=False))
        log.info(f"Study {name} in {self.storage}: {counts}, {self.n_trials} trials in total")
        return study, space, fixed

    def configure(
        self,
        study: optuna.Study,
        trials: list[optuna.trial.Trial],
        space: dict[str, Any],
        fixed: dict[str, str],
    ) -> list[Sequence[str]]:
        """Each trial's overrides, its values drawn by the sampler seeded with ``seed + trial number`` (a
        restarted study does not propose its first trials' values again, as one seed would, and workers
        sharing a study draw differently: trial numbers are unique in a study) and trained as
        ``trained_value`` rounds them."""
        seed = self.sampler.keywords.get("seed")
        overrides: list[Sequence[str]] = []
        for trial in trials:
            study.sampler = self.sampler(seed=None if seed is None else seed + trial.number)
            self._configure_trials([trial], space, fixed)  # draws the values, records the fixed ones
            values = {**trained_params(trial.params), **fixed}
            overrides.append(tuple(f"{key}={value}" for key, value in values.items()))
        return overrides

    def trials_to_go(self, study: optuna.Study) -> int:
        optuna.storages.fail_stale_trials(study)  # a lost worker's trials: interrupted, queued again
        return self.n_trials - sum(map(counts_toward_total, study.get_trials(deepcopy=False)))

    def run_trials(self, study: optuna.Study, space: dict[str, Any], fixed: dict[str, str]) -> None:
        while (to_go := self.trials_to_go(study)) > 0:
            trials = [study.ask() for _ in range(min(self.n_jobs, to_go))]
            overrides = self.configure(study, trials, space, fixed)
            with self.heartbeats(trials):
                try:
                    returns = self.launcher.launch(overrides, initial_job_idx=trials[0].number)
                except BaseException:  # Ctrl+C, SIGTERM: the trials run again next time
                    for trial in trials:
                        study.tell(trial, state=optuna.trial.TrialState.FAIL)
                        run_again(study, trial)
                    raise
            for trial, job in zip(trials, returns, strict=True):
                tell(study, trial, job)

    @contextmanager
    def heartbeats(self, trials: Sequence[optuna.trial.Trial]) -> Iterator[None]:
        """Beat for ``trials`` every ``heartbeat_s`` seconds while their jobs run."""
        stop = threading.Event()

        def beat() -> None:
            while True:
                for trial in trials:
                    self.storage_backend.record_heartbeat(trial._trial_id)  # Optuna's own trial id
                if stop.wait(self.heartbeat_s):
                    return

        thread = threading.Thread(target=beat, daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()

    def report(self, study: optuna.Study) -> None:
        """Log the trial counts and the best trial, and write ``best.yaml`` (when a trial completed)."""
        counts = trial_counts(study.get_trials(deepcopy=False))
        log.info(f"Study {study.study_name}: {counts}")
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
        return math.nan, f"returned {value}", run_dir
    summary = json.loads(summary_file.read_text())
    return math.nan, f"{summary['status']}: {summary['error']}", run_dir


def tell(study: optuna.Study, trial: optuna.trial.Trial, job: JobReturn) -> None:
    value, error, run_dir = job_outcome(job)
    trial.set_user_attr(RUN_DIR_ATTR, run_dir)
    if error is None:
        study.tell(trial, value)
        return
    trial.set_user_attr(ERROR_ATTR, error)
    study.tell(trial, state=optuna.trial.TrialState.FAIL)
    log.warning(f"Trial {trial.number} failed: {error}")
