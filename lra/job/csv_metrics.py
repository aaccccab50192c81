"""``csv/metrics.csv`` whole or not at all: Lightning's CSV logger, with a writer that never leaves a
partial row and lets a full disk pass.

Lightning's writer appends the rows it has gathered, and rewrites the whole file in place when a new
column appears. On a full disk the first leaves half a row, which a resumed run would read back
(``lra.job.loggers.continue_csv``), and the second empties the file. Here a save that adds a column
writes the whole file to a temporary one and renames it into place, an append that fails is cut
back to where it began, and the gathered rows stay in memory for the next save. The CSV file is a
log: a full disk there is warned about once, and the run goes on to its checkpoints and
summary.json, which say it in one line (``lra.job.disk_full``) and keep the final metrics.
"""

from __future__ import annotations

import csv
import io
import logging
import os
from pathlib import Path

from lightning.fabric.loggers.logger import rank_zero_experiment
from lightning.pytorch.loggers import CSVLogger
from lightning.pytorch.loggers.csv_logs import ExperimentWriter

from lra.job.disk_full import disk_full_errors

log = logging.getLogger(__name__)


class AtomicRowsWriter(ExperimentWriter):
    """Lightning's CSV experiment writer whose ``save`` writes every gathered row or none (module
    docstring)."""

    def __init__(self, log_dir: str) -> None:
        super().__init__(log_dir=log_dir)
        self.warned = False  # about a full disk, once

    def save(self) -> None:
        if not self.metrics:
            return
        path = Path(self.metrics_file_path)
        known = list(self.metrics_keys)
        new_column = bool(self._record_new_keys())
        try:
            if new_column or not path.is_file():
                self.write_whole(path)
            else:
                self.append(path)
        except OSError as error:
            self.metrics_keys = known  # a new column is written with the rows, at the next save
            if not disk_full_errors(error):
                raise
            if not self.warned:
                log.warning("%s: no space left on device; its rows wait in memory for the next save", path)
                self.warned = True
            return
        self.metrics = []

    def write_whole(self, path: Path) -> None:
        """The file's rows and the gathered ones under the current header, renamed into place."""
        rows = []
        if path.is_file():
            with open(path, newline="", encoding="utf-8") as handle:
                rows = list(csv.DictReader(handle))
        partial = path.with_name(f".{path.name}.tmp-{os.getpid()}")
        try:
            with open(partial, "w", newline="", encoding="utf-8") as handle:
                writer = csv.DictWriter(handle, fieldnames=self.metrics_keys)
                writer.writeheader()
                writer.writerows(rows + self.metrics)
            os.replace(partial, path)
        finally:
            partial.unlink(missing_ok=True)

    def append(self, path: Path) -> None:
        """The gathered rows at the end of the file, unbuffered; an error cuts it back to its old length."""
        text = io.StringIO()
        csv.DictWriter(text, fieldnames=self.metrics_keys).writerows(self.metrics)
        content = text.getvalue().encode("utf-8")
        handle = os.open(path, os.O_WRONLY | os.O_APPEND)
        try:
            start = os.fstat(handle).st_size
            try:
                while content:
                    content = content[os.write(handle, content) :]
            except OSError:
                os.ftruncate(handle, start)
                raise
        finally:
            os.close(handle)


class AtomicCSVLogger(CSVLogger):
    """Lightning's ``CSVLogger`` with the ``AtomicRowsWriter``."""

    @property
    @rank_zero_experiment  # as Lightning's: under DDP only process 0 opens (and first empties) the file
    def experiment(self) -> AtomicRowsWriter:
        if self._experiment is None:
            self._fs.makedirs(self.root_dir, exist_ok=True)
            self._experiment = AtomicRowsWriter(log_dir=self.log_dir)
        return self._experiment
