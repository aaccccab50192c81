"""``csv/metrics.csv`` on a full disk (``lra.job.csv_metrics``): no partial row, no emptied file, and the
rows wait in memory for the next save."""

from __future__ import annotations

import csv
import errno
import os

from lra.job import csv_metrics
from lra.job.csv_metrics import AtomicCSVLogger


def rows(logger: AtomicCSVLogger) -> list[dict[str, str]]:
    with open(logger.experiment.metrics_file_path, newline="") as handle:
        return list(csv.DictReader(handle))


def test_a_full_disk_leaves_whole_rows_and_the_next_save_writes_the_rest(tmp_path, monkeypatch, caplog):
    logger = AtomicCSVLogger(save_dir=str(tmp_path), name="csv", version="")
    logger.log_metrics({"train/loss": 1.0}, step=0)
    logger.save()
    write, replace = os.write, os.replace

    def half_then_full(handle: int, content: bytes) -> int:
        if len(content) > 4:
            return write(handle, content[: len(content) // 2])  # a short write, then no space
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def full(source, target):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(csv_metrics.os, "write", half_then_full)
    logger.log_metrics({"train/loss": 2.0}, step=1)
    with caplog.at_level("WARNING", logger="lra.job.csv_metrics"):
        logger.save()  # an append
        logger.log_metrics({"val/acc": 0.5}, step=2)
        monkeypatch.setattr(csv_metrics.os, "replace", full)
        logger.save()  # a new column: the whole file
    assert rows(logger) == [{"train/loss": "1.0", "step": "0"}]  # as before both saves
    assert len(caplog.messages) == 1 and "no space left on device" in caplog.messages[0]
    assert [path.name for path in (tmp_path / "csv").iterdir() if path.name.startswith(".")] == []

    monkeypatch.setattr(csv_metrics.os, "write", write)
    monkeypatch.setattr(csv_metrics.os, "replace", replace)
    logger.save()
    assert [(row["step"], row["train/loss"], row["val/acc"]) for row in rows(logger)] == [
        ("0", "1.0", ""),
        ("1", "2.0", ""),
        ("2", "", "0.5"),
    ]
    logger.log_metrics({"train/loss": 3.0}, step=3)
    logger.save()
    assert rows(logger)[-1] == {"train/loss": "3.0", "step": "3", "val/acc": ""}
