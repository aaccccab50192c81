"""What the console leaves out: Lightning notes that come from a known place and say nothing about the run.

``QuietNotes`` is a logging filter on Hydra's console handler (``hydra.job_logging`` in
conf/config.yaml); it drops a record by where it was logged from (its module and function), never
by its text, so every other message of the same logger still shows. The job's ``.log`` file keeps
them all.
"""

from __future__ import annotations

import logging

# (module, function) a record comes from -> why the console leaves it out
QUIET_ORIGINS: dict[tuple[str, str], str] = {
    ("logger_connector", "configure_logger"): "Lightning's advert for its LitLogger, on every run",
    ("setup", "_determine_batch_limits"): "'Trainer(limit_val_batches=1)' was configured: the config says so",
    ("model_checkpoint", "on_exception"): (
        "'An KeyboardInterrupt was raised with message': the run's own line names the step and the "
        "best validation so far (lra.job.job_state)"
    ),
}


class QuietNotes(logging.Filter):
    """Drops the records logged from the places of ``QUIET_ORIGINS``."""

    def filter(self, record: logging.LogRecord) -> bool:
        return (record.module, record.funcName) not in QUIET_ORIGINS
