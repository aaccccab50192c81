"""Where a study lives (``hydra.sweeper.storage``) and the heartbeats that tell a lost trial.

The storage is
- a SQLAlchemy URL: ``sqlite:///PATH`` (the default, ``<sweep dir>/optuna.db``: one machine), or a
  server database, ``postgresql+psycopg://user:password@host/db`` (the ``postgres`` extra);
- a path ending in ``.journal``: an Optuna journal file (``JournalFileBackend`` with
  ``JournalFileOpenLock``, a lock that holds on NFS), which SLURM array workers on a shared file system
  add to at once, without a database server.

Heartbeats work the same on every storage: while a trial runs, its sweeper records
``{"time": unix seconds, "every_s": interval}`` in the trial's system attribute ``lra:heartbeat`` every
``every_s`` seconds. A running trial whose last beat is older than ``MISSED_BEATS`` intervals is stale:
the process that ran it died (SIGKILL, a lost node). Clocks of the workers are compared, so they are
assumed to agree to well within ``MISSED_BEATS × every_s``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import optuna
from optuna.storages import BaseStorage, JournalStorage, RDBStorage
from optuna.storages.journal import JournalFileBackend, JournalFileOpenLock
from optuna.trial import FrozenTrial, TrialState

from lra.config.errors import ConfigError
from lra.config.extras import POSTGRES, install_hint
from lra.search.study import JOURNAL_SUFFIX

log = logging.getLogger(__name__)
HEARTBEAT_ATTR = "lra:heartbeat"
MISSED_BEATS = 3


def is_journal(storage: str) -> bool:
    """Whether ``hydra.sweeper.storage`` names a journal file (a path, not a URL, ending in .journal)."""
    return "://" not in storage and storage.endswith(JOURNAL_SUFFIX)


def open_storage(storage: str) -> BaseStorage:
    """The Optuna storage that ``storage`` names (the module docstring); a ``ConfigError`` of one line
    when it cannot be opened."""
    if "://" not in storage and not is_journal(storage):
        raise ConfigError(
            f"hydra.sweeper.storage={storage} is neither a SQLAlchemy URL (sqlite:///PATH, "
            f"postgresql+psycopg://...) nor a journal file (PATH{JOURNAL_SUFFIX})"
        )
    try:
        if is_journal(storage):
            lock = JournalFileOpenLock(storage)
            return JournalStorage(JournalFileBackend(storage, lock_obj=lock))
        return RDBStorage(storage)
    except ImportError as error:
        raise ConfigError(
            f"cannot open the study storage {storage}: its database driver {error.name} is not installed; "
            f"for PostgreSQL, {install_hint(POSTGRES)} and a postgresql+psycopg:// URL"
        ) from None
    except Exception as error:  # SQLAlchemy, driver and file errors have no common base
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise ConfigError(f"cannot open the study storage {storage}: {reason}") from None


def record_heartbeat(storage: BaseStorage, trial_id: int, every_s: float) -> None:
    storage.set_trial_system_attr(trial_id, HEARTBEAT_ATTR, {"time": time.time(), "every_s": every_s})


def is_stale(trial: FrozenTrial, now: float, every_s: float) -> bool:
    """A running trial whose heartbeats stopped. One that never beat (its worker died between asking
    for it and its first beat) is judged from its start, at the judging worker's ``every_s``."""
    if trial.state != TrialState.RUNNING:
        return False
    beat = trial.system_attrs.get(HEARTBEAT_ATTR) or {
        "time": trial.datetime_start.timestamp(),
        "every_s": every_s,
    }
    return now - beat["time"] > MISSED_BEATS * beat["every_s"]


@contextmanager
def heartbeats(storage: BaseStorage, trial_ids: Sequence[int], every_s: float) -> Iterator[None]:
    """Beat for each of ``trial_ids`` (Optuna's storage ids) at once and then every ``every_s`` seconds
    while the block runs. A trial that another worker has meanwhile finished (it judged it stale) is
    logged and no longer beaten."""
    stop = threading.Event()
    beating = list(trial_ids)

    def beat() -> None:
        while beating:
            for trial_id in list(beating):
                try:
                    record_heartbeat(storage, trial_id, every_s)
                except optuna.exceptions.UpdateFinishedTrialError:
                    log.warning(f"Trial id {trial_id} was finished by another worker while it ran")
                    beating.remove(trial_id)
            if stop.wait(every_s):
                return

    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
