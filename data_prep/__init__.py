"""Turn each LRA task's real source (or a built-in generator) into the prepared format, and read it.

    python -m data_prep TASK ...                    # see `python -m data_prep --help`
    prepared = data_prep.PreparedSet("listops-generated")
    tokens, length, label = prepared.split("train")[0]

``recipes`` says how each task's set is built (and what the harness builds by itself), ``storage``
writes the prepared format, ``reader`` reads and verifies it. One module per real source (``text``,
``image``, ``retrieval``; ``lra_archive``, ``sources``, ``download`` fetch and find them) and one
sub-package per synthetic task (``listops``, ``pathfinder``). It imports numpy, Pillow, tqdm and
the standard library: never torch or ``lra``.
"""

from data_prep.reader import PreparedSet, PreparedSplit, load
from data_prep.recipes import ensure_prepared, how_to_prepare, resolve
from data_prep.small_sets import STAND_IN_SOURCE, SetShape, ensure_small, resolve_small, small_set_line
from data_prep.storage import CorruptDataError, DataNotPreparedError, PreparedWriter, default_root

__all__ = [
    "CorruptDataError",
    "DataNotPreparedError",
    "PreparedSet",
    "PreparedSplit",
    "PreparedWriter",
    "STAND_IN_SOURCE",
    "SetShape",
    "default_root",
    "ensure_prepared",
    "ensure_small",
    "how_to_prepare",
    "load",
    "resolve",
    "resolve_small",
    "small_set_line",
]
