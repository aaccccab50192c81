"""A sweep that SIGTERM or SIGINT stops: no job starts after the signal, and the sweep's table names the
jobs that stopped and those that did not start, with the command that continues them.

Hydra's launchers go on to the next job whatever became of the last one. The harness's launchers
(``hydra_plugins.lra_launchers``: ``one_by_one`` for ``hydra/launcher=local``, ``in_parallel`` for
``joblib``) note the stop signals for the whole sweep (``lra.config.stop_signals.NotedStop``):

- a job that runs when the signal comes stops at the end of its step with its state saved
  (``lra.job.agreed_stop``: its handlers pass the signal on to the sweep's) and is ``interrupted``;
  one that is past training finishes its tests;
- a job that has not started by then does not start;
- a job that fails leaves the sweep going, as one that completes does.

Once the jobs that ran have ended, the sweep prints its table with the jobs that did not start and
the command that continues it (``resume=auto``: each interrupted job from its checkpoint, the others
afresh, the completed ones reported), and exits as a stopped run does, with 128 + the signal's number.

Under ``joblib`` the signal reaches every process of the group: this one, its worker processes and
their loader workers. A worker process killed between jobs would make the executor kill the others,
jobs and all, so the workers start with the stop signals held back (``received_off_this_thread``);
each takes them only while it runs a job (``job_in_worker``), and a worker that took one starts no
other job of the sweep.
"""

from __future__ import annotations

import functools
import logging
import shlex
import signal
import sys
import uuid
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hydra.core.utils import JobReturn, filter_overrides

from lra.config.stop_signals import NotedStop, noting, received_off_this_thread, unblocked
from lra.results.summary_tables import print_sweep_table

log = logging.getLogger(__name__)

Jobs = Sequence[Sequence[str]]  # each job's overrides, in the sweep's order
RESUME_KEY = "resume"
# conf/hydra/launcher/joblib.yaml takes the options of the joblib plugin's config of that name on purpose;
# Hydra warns of every such pair as it composes a config: the sweep's, and each job's in its worker.
JOBLIB_SCHEMA_WARNING = r"\s*'hydra/launcher/joblib' is validated against ConfigStore schema"


def quiet_joblib_schema_warning() -> None:
    warnings.filterwarnings("ignore", message=JOBLIB_SCHEMA_WARNING)


def one_by_one(
    jobs: Jobs, first: int, launch: Callable[[Sequence[str], int], Sequence[JobReturn]], sweep_dir: Path
) -> list[JobReturn]:
    """Run ``jobs`` (numbered from ``first``) one after another in this process, each with ``launch``
    (its overrides, its number), until a stop signal comes (module docstring)."""
    sweep = NotedStop()
    runs: list[JobReturn] = []
    started: set[int] = set()
    with noting(sweep):
        for number, overrides in enumerate(jobs, first):
            if sweep.noted:
                break
            started.add(number)
            try:
                runs.extend(launch(overrides, number))
            except SystemExit:  # a job that the signal stopped ends its process: so does the sweep
                if not sweep.noted:
                    raise
                break
    end_if_stopped(sweep.noted, jobs, first, started, sweep_dir)
    return runs


@dataclass(frozen=True)
class WorkerOutcome:
    """What became of a job sent to a worker process: whether it started, its ``JobReturn`` (None when it
    did not start, or the signal stopped it), and the stop signal that worker noted (0 for none)."""

    number: int
    started: bool
    job: JobReturn | None
    noted: int


WORKER_NOTES: dict[str, NotedStop] = {}  # a worker process's stop signals for each sweep, kept between jobs


def job_in_worker(sweep_id: str, number: int, execute: Callable[[], JobReturn]) -> WorkerOutcome:
    """Run job ``number`` in this worker process (``execute``) unless the worker noted a stop signal of
    sweep ``sweep_id``; the signals that came while it waited for the job land now."""
    quiet_joblib_schema_warning()
    note = WORKER_NOTES.setdefault(sweep_id, NotedStop())
    with noting(note), unblocked():
        if note.noted:
            return WorkerOutcome(number, False, None, note.noted)
        try:
            return WorkerOutcome(number, True, execute(), note.noted)
        except SystemExit:  # the job stopped on the signal
            if not note.noted:
                raise
            return WorkerOutcome(number, True, None, note.noted)


def in_parallel(launcher: Any, jobs: Jobs, first: int) -> list[JobReturn]:
    """Run ``jobs`` (numbered from ``first``) ``n_jobs`` at a time in joblib's worker processes, with the
    joblib launcher's options (``launcher.joblib``), until a stop signal comes (module docstring)."""
    from hydra.core.singleton import Singleton
    from hydra.core.utils import configure_log, setup_globals
    from hydra_plugins.hydra_joblib_launcher._core import execute_job, process_joblib_cfg
    from joblib import Parallel, delayed

    setup_globals()
    config = launcher.config
    configure_log(config.hydra.hydra_logging, config.hydra.verbose)
    sweep_dir = Path(str(config.hydra.sweep.dir))
    sweep_dir.mkdir(parents=True, exist_ok=True)
    options = {**launcher.joblib, "backend": "loky"}  # as the plugin: its threads do not suit Hydra
    process_joblib_cfg(options)
    log.info(f"Launching {len(jobs)} jobs, {options['n_jobs']} at a time, in {sweep_dir}")
    for number, overrides in enumerate(jobs, first):
        log.info(f"\t#{number} : {' '.join(filter_overrides(overrides))}")
    state, sweep, sweep_id = Singleton.get_state(), NotedStop(), uuid.uuid4().hex

    def dispatched() -> Iterator[Any]:
        for number, overrides in enumerate(jobs, first):
            if sweep.noted:
                return
            job = (number, overrides, launcher.hydra_context, config, launcher.task_function, state)
            yield delayed(job_in_worker)(sweep_id, number, functools.partial(execute_job, *job))

    with noting(sweep), received_off_this_thread():
        outcomes: list[WorkerOutcome] = Parallel(**options)(dispatched())
    started = {outcome.number for outcome in outcomes if outcome.started}
    end_if_stopped(max([sweep.noted, *(o.noted for o in outcomes)]), jobs, first, started, sweep_dir)
    return [outcome.job for outcome in outcomes if outcome.job is not None]


def end_if_stopped(noted: int, jobs: Jobs, first: int, started: set[int], sweep_dir: Path) -> None:
    """After a stop signal (``noted``, 0 for none): print the sweep's table, the jobs that did not start
    and the command that continues the sweep, then exit with 128 + the signal's number."""
    if not noted:
        return
    summaries = print_sweep_table(sweep_dir)
    interrupted = sum(summary["status"] == "interrupted" for summary in summaries)
    waiting = [number for number in range(first, first + len(jobs)) if number not in started]
    labels = job_labels(jobs)
    names = ", ".join(f"#{number} {labels[number - first]}".rstrip() for number in waiting)
    print(
        f"The sweep stopped on {signal.Signals(noted).name}: {interrupted} interrupted, "
        f"{len(waiting)} not started{f' ({names})' if names else ''}\n"
        f"lra: interrupted: continue the sweep with: {continue_command(sys.argv[1:])}",
        file=sys.stderr,
        flush=True,
    )
    raise SystemExit(128 + noted)


def job_labels(jobs: Jobs) -> list[str]:
    """Each job as the overrides that tell it from the sweep's other jobs (``seed=1 attention=performer``)."""
    values = [
        {key: value for key, _, value in (o.partition("=") for o in filter_overrides(job))} for job in jobs
    ]
    keys = list(dict.fromkeys(key for job in values for key in job))
    varied = [key for key in keys if len({job.get(key) for job in values}) > 1]
    return [" ".join(f"{key}={job[key]}" for key in varied if key in job) for job in values]


def continue_command(arguments: Sequence[str]) -> str:
    """``python -m lra`` with this sweep's ``arguments`` and ``resume=auto`` in place of any ``resume``."""
    kept = [argument for argument in arguments if argument.lstrip("+~").partition("=")[0] != RESUME_KEY]
    return shlex.join(["python", "-m", "lra", *kept, f"{RESUME_KEY}=auto"])
