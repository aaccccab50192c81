"""A study's trials as the search counts them, and which of them run again.

The search records in each trial's user attributes (shown by Optuna's dashboard and the report):
- ``error``: why it failed: its run failed, returned NaN or raised, or its job died once more than it
  may be retried;
- ``run_dir``: the folder its run trained in;
- ``retries_left``: how many more times its parameters run again if its job dies;
- ``retry_of``: the number of the trial whose parameters it runs again;
- ``skipped``: it was asked when the study already had ``n_trials`` (workers asking at the same
  moment): not run and not counted.

A failed trial with neither ``error`` nor ``skipped`` was interrupted: its parameters are queued again
(a waiting trial, which the next ``ask`` of any worker takes), and with ``resume=auto`` the run
continues from its last checkpoint. ``n_trials`` counts every trial but waiting, interrupted and
skipped ones.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

import optuna
from optuna.storages import BaseStorage
from optuna.trial import FrozenTrial, TrialState

from lra.one_line import one_line
from lra.search.storage import is_stale

log = logging.getLogger(__name__)
ERROR_ATTR = "error"
RUN_DIR_ATTR = "run_dir"
RETRIES_ATTR = "retries_left"
RETRY_OF_ATTR = "retry_of"
SKIPPED_ATTR = "skipped"
# What a trial's failure to finish means for its retries: a job that died (its launcher raised, its
# heartbeats stopped) spends one; a sweep stopped by Ctrl+C or SIGTERM spends none.
DIED, STOPPED = "died", "stopped"
REASON_WIDTH = 80  # characters of each failed trial's reason in the search's last line


def was_interrupted(trial: FrozenTrial) -> bool:
    attrs = trial.user_attrs
    return trial.state == TrialState.FAIL and ERROR_ATTR not in attrs and SKIPPED_ATTR not in attrs


def counts_toward_total(trial: FrozenTrial) -> bool:
    """A trial that took one of the search's ``n_trials``: running, completed, pruned, or failed for a
    reason of its own."""
    skipped = SKIPPED_ATTR in trial.user_attrs
    return trial.state != TrialState.WAITING and not was_interrupted(trial) and not skipped


def trial_counts(trials: Sequence[FrozenTrial]) -> dict[str, int]:
    """``{"completed", "failed", "interrupted", "running", "skipped"}``: a study's trials in each state."""
    counts = dict.fromkeys(("completed", "failed", "interrupted", "running", "skipped"), 0)
    for trial in trials:
        if SKIPPED_ATTR in trial.user_attrs:
            counts["skipped"] += 1
        elif trial.state == TrialState.COMPLETE:
            counts["completed"] += 1
        elif trial.state == TrialState.RUNNING:
            counts["running"] += 1
        elif trial.state == TrialState.FAIL:
            counts["interrupted" if was_interrupted(trial) else "failed"] += 1
    return counts


def within_total(study: optuna.Study, trial: FrozenTrial, n_trials: int) -> bool:
    """Whether ``trial`` has one of the ``n_trials`` places: fewer than ``n_trials`` counted trials have a
    smaller number. Of workers that ask at the same moment, those with the later trials give way."""
    earlier = [t for t in study.get_trials(deepcopy=False) if t.number < trial.number]
    return sum(map(counts_toward_total, earlier)) < n_trials


def tell_failed(study: optuna.Study, number: int) -> bool:
    """Record trial ``number`` as failed; False when it was finished already (by another worker)."""
    try:
        study.tell(number, state=TrialState.FAIL)
    except (optuna.exceptions.UpdateFinishedTrialError, ValueError):  # ValueError: "Cannot tell a ..."
        return False
    return True


def skip(study: optuna.Study, storage: BaseStorage, trial: FrozenTrial) -> None:
    """Finish a trial asked past ``n_trials`` without running it."""
    storage.set_trial_user_attr(trial._trial_id, SKIPPED_ATTR, "the study had n_trials already")
    tell_failed(study, trial.number)


def interrupt(study: optuna.Study, storage: BaseStorage, trial: FrozenTrial, cause: str, reason: str) -> None:
    """Finish a running trial whose run did not end (``cause``: ``DIED`` or ``STOPPED``, ``reason`` in
    words) and queue its parameters again; a trial whose job died with no retry left is recorded as
    failed with ``reason`` instead. Nothing happens when another worker finished it first."""
    left = trial.user_attrs.get(RETRIES_ATTR, 0)
    if cause == DIED and left == 0:
        try:
            storage.set_trial_user_attr(trial._trial_id, ERROR_ATTR, f"{reason}; no retry left")
        except optuna.exceptions.UpdateFinishedTrialError:
            return
        if tell_failed(study, trial.number):
            log.warning(f"Trial {trial.number} failed: {reason}; no retry left")
        return
    if not tell_failed(study, trial.number):
        return
    left -= cause == DIED
    origin = trial.user_attrs.get(RETRY_OF_ATTR, trial.number)
    study.enqueue_trial(trial.params, user_attrs={RETRIES_ATTR: left, RETRY_OF_ATTR: origin})
    log.warning(f"Trial {trial.number} interrupted ({reason}): queued again, {left} retries left")


def fail_stale_trials(study: optuna.Study, storage: BaseStorage, every_s: float) -> None:
    """Interrupt every running trial whose heartbeats stopped (``lra.search.storage``; ``every_s``: this
    worker's interval, for a trial that never beat): its job died."""
    now = time.time()
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        if is_stale(trial, now, every_s):
            interrupt(study, storage, trial, DIED, "its heartbeats stopped: the process that ran it died")


def failures_line(trials: Sequence[FrozenTrial]) -> str | None:
    """``trials 2, 5: REASON; trial 7: REASON``: the trials that failed for a reason of their own (each
    reason cut between words), or None when none did."""
    numbers: dict[str, list[int]] = {}
    for trial in trials:
        if trial.state == TrialState.FAIL and counts_toward_total(trial):
            numbers.setdefault(trial.user_attrs.get(ERROR_ATTR, "no reason recorded"), []).append(
                trial.number
            )
    parts = [
        f"trial{'s' if len(found) > 1 else ''} {', '.join(map(str, found))}: {one_line(reason, REASON_WIDTH)}"
        for reason, found in numbers.items()
    ]
    return "; ".join(parts) or None
