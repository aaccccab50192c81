"""How a job ended: its status from what stopped it, and the ``summary.json`` that records it.

``failures_noted`` turns the exception that ends a job into its status and one-line error (SIGTERM
and Ctrl+C still end the process); ``record_outcome`` writes the summary from the ``JobState`` the
job filled in as it went, so a failed job is recorded with whatever it had built.
"""

from __future__ import annotations

import json
import signal
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import lightning as L
import torch
from lightning.fabric.utilities.rank_zero import rank_zero_only
from lightning.pytorch.utilities.exceptions import SIGTERMException

from data_prep.storage import CorruptDataError
from lra.config.errors import ConfigError, CorruptCheckpointError, RunFolderBusy
from lra.config.records import SummaryRecord
from lra.job.agreed_stop import stop_signal
from lra.job.disk_full import disk_full_errors, disk_full_line
from lra.job.job_state import JobState
from lra.job.resume import CHECKPOINT_DIR
from lra.model.module import NonFiniteLossError
from lra.results.summary_json import SUMMARY_FILE, make_summary, write_summary
from lra.results.summary_tables import format_table

# Errors whose message says all there is to say: no traceback file for these.
EXPLAINED_ERRORS = (
    ConfigError,
    FileNotFoundError,
    CorruptDataError,
    NonFiniteLossError,
    CorruptCheckpointError,
)
# Exit status after SIGTERM, as a shell reports a process ended by it.
SIGTERM_EXIT_STATUS = 128 + signal.SIGTERM


def device_description(trainer: L.Trainer | None, accelerator: str) -> str:
    """``cpu``, or the name of the GPU the run used (would have used, when it stopped before the trainer)."""
    if trainer is not None:
        device = trainer.strategy.root_device
        return torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    on_gpu = accelerator in ("auto", "gpu", "cuda") and torch.cuda.is_available()
    return torch.cuda.get_device_name() if on_gpu else "cpu"


def report_completed(directory: Path) -> dict[str, Any]:
    """The summary of a job that already completed in ``directory`` (``resume=auto`` skips it)."""
    summary = json.loads((directory / SUMMARY_FILE).read_text())
    if rank_zero_only.rank == 0:
        print(f"\n{format_table([summary])}\nsummary: {directory / SUMMARY_FILE} (completed earlier)")
    return summary


@contextmanager
def failures_noted(state: JobState) -> Iterator[None]:
    """Note in ``state`` the status and error of an exception that ends the job, instead of raising it;
    SIGTERM and Ctrl+C still end the process (``SystemExit``, ``KeyboardInterrupt``)."""
    try:
        yield
    except NonFiniteLossError as exception:
        state.status, state.error = "nan", str(exception)
    except RunFolderBusy as exception:
        state.status, state.error, state.refused_folder = "failed", str(exception), True
    except EXPLAINED_ERRORS as exception:
        state.status, state.error = "failed", str(exception)
    except SIGTERMException:  # SIGTERM or SIGINT, at the end of a step (lra.job.agreed_stop)
        saved = state.run_dir / CHECKPOINT_DIR
        signum = stop_signal(state.current_trainer())
        state.status = "interrupted"
        state.error = (
            f"{signum.name} at {state.stopped_at()}; the state is saved in {saved}: resume=auto continues"
        )
        raise SystemExit(128 + signum) from None
    except (KeyboardInterrupt, SystemExit):
        state.status, state.error = "interrupted", state.interruption(state.run_dir / CHECKPOINT_DIR)
        raise
    except Exception as exception:
        if disk_full := disk_full_errors(exception):  # whatever else failed on the way out: one line
            state.status, state.error = "failed", disk_full_line(disk_full, state.run_dir)
            return
        state.status, state.error = "failed", f"{type(exception).__name__}: {exception}".splitlines()[0]
        if rank_zero_only.rank == 0:
            trace_file = state.run_dir / "traceback.txt"
            state.run_dir.mkdir(parents=True, exist_ok=True)
            trace_file.write_text(traceback.format_exc())
            state.error += f" (traceback: {trace_file})"


def record_outcome(record: SummaryRecord, state: JobState) -> dict[str, Any]:
    """The job's summary from ``state``; process 0 writes it to summary.json and prints the final table."""
    parts, datamodule = state.parts, state.datamodule
    metrics = state.metrics
    if state.status != "completed" and parts is not None:
        metrics = {**parts.efficiency.metrics, **state.reached(), **metrics}
    summary = make_summary(
        record,
        status=state.status,
        error=state.error,
        metrics=metrics,
        device=device_description(parts.trainer if parts else None, record.accelerator),
        started=state.started,
        output_dir=state.run_dir,
        data=None if datamodule is None else datamodule.description(),
        resumed_from=state.resumed_from,
        pretrain=state.pretrain,
    )
    if rank_zero_only.rank == 0:
        summary, where = written_summary(summary, state)
        print(f"\n{format_table([summary])}\nsummary: {where}", flush=True)
        if state.status == "interrupted":  # the process exits now: say why, as a failed single run does
            print(f"lra: interrupted: {state.error}", file=sys.stderr, flush=True)
    return summary


def written_summary(summary: dict[str, Any], state: JobState) -> tuple[dict[str, Any], str]:
    """Write ``summary`` to the run's summary.json unless the job was refused its run folder (it writes
    nothing: the folder it was started in may be the other process's too); the summary and where it
    went. On a full disk its metrics are printed instead and the summary returned says ``failed`` with
    the disk-full line."""
    if state.refused_folder:
        return summary, "not written (another process writes this run)"
    try:
        return summary, str(write_summary(summary, state.run_dir))
    except OSError as error:
        if not disk_full_errors(error):
            raise
        print(f"metrics: {json.dumps(summary['metrics'])}", flush=True)
        failed = {**summary, "status": "failed", "error": disk_full_line([error], state.run_dir)}
        return failed, "not written (no space left on device)"
