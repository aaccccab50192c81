"""The datamodules, each built from its ``DataRecord``: a task's prepared set (``prepared.py``), or the
examples of a recall generator of ``data_prep.recall`` (``recall.py``) when the record has a
``RecallRecord``."""

from __future__ import annotations

from lra.config.records import DataRecord
from lra.data.prepared import EpochPermutationSampler, LRADataModule
from lra.data.recall import IGNORE, RecallDataModule

__all__ = ["IGNORE", "EpochPermutationSampler", "LRADataModule", "RecallDataModule", "datamodule_of"]


def datamodule_of(record: DataRecord) -> LRADataModule:
    """The datamodule of a run's ``DataRecord``: generated recall examples or the prepared set."""
    kind = LRADataModule if record.recall is None else RecallDataModule
    return kind.of_record(record)
