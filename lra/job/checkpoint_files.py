"""Checkpoint files a run can trust: each is written whole or not at all, its SHA-256 is recorded
beside it, and it is verified before it is loaded.

- ``write_checkpoint``: ``torch.save`` into memory, then into a hidden temporary file in the same
  folder, flushed and fsynced, and renamed over the old file (the folder is fsynced too): until the
  new file is complete the old one stays, and a full disk leaves no partial file behind.
- ``checkpoints/stamps.json`` records each file's ``{bytes, mtime_ns, sha256}``, the format of the
  prepared data's stamps (``data_prep.storage``). While a new file is renamed into place the stamp of
  the one it replaces is kept too (``<name>.replaced``), so a process killed at any moment leaves a
  file that verifies.
- ``checkpoint_fault``: why a file cannot be trusted (its size or SHA-256 differs from every stamp
  recorded for it); a file without a stamp (written elsewhere, or before stamps) has none to fail.
- ``VerifiedCheckpointIO``: Lightning's checkpoint I/O through these functions: every save of a
  ``ModelCheckpoint``, its removal of a superseded file (whose stamp goes with it), and every load (a
  resume, the test of the best checkpoint).
- ``resumable_checkpoint``: the checkpoint a run folder continues from, the newest that verifies
  (``newest_verified``), with one line naming a newer one that failed.
"""

from __future__ import annotations

import io
import json
import logging
import os
from pathlib import Path
from typing import Any

import torch
from lightning.fabric.plugins import TorchCheckpointIO

from data_prep.storage import STAMPS_FILE, hashed_stamp, partial_file, write_stamps
from lra.config.errors import CorruptCheckpointError

log = logging.getLogger(__name__)

CHECKPOINT_DIR = "checkpoints"
LAST_CHECKPOINT = "last"  # checkpoints/last.ckpt: fine-tuning's full state
BEST_CHECKPOINT = "best"  # checkpoints/best.ckpt: the selected evaluation's full state
PRETRAIN_LAST_CHECKPOINT = "pretrain-last"  # the same two of the pretraining stage
PRETRAIN_BEST_CHECKPOINT = "pretrain-best"
WEIGHTS_FILE = "pretrained.pt"  # the pretrained encoder's weights and what they were pretrained for
WEIGHTS_HINT = "give a run folder of a finished pretraining or its checkpoints/pretrained.pt"
# What a run continues from, newest first as a run writes them: a stage saves its best checkpoint at
# the same evaluation as its last one or earlier, and pretraining ends before fine-tuning starts.
RESUMABLE = (LAST_CHECKPOINT, BEST_CHECKPOINT, PRETRAIN_LAST_CHECKPOINT, PRETRAIN_BEST_CHECKPOINT)
REPLACED = ".replaced"  # suffix of the stamp of a file being replaced, while the rename is pending


def read_stamps(folder: Path) -> dict[str, dict[str, Any]]:
    """``folder/stamps.json``: file name -> stamp; empty when there is none or it is unreadable."""
    try:
        stamps = json.loads((folder / STAMPS_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return stamps if isinstance(stamps, dict) else {}


def sync_folder(folder: Path) -> None:
    """fsync ``folder`` itself, so that a rename in it survives a crash of the machine."""
    handle = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)


def write_file(path: Path, content: bytes | memoryview) -> None:
    """Write ``content`` to ``path`` atomically and durably, stamped in the folder's stamps.json
    (module docstring); an ``OSError`` names ``path`` and leaves the old file and stamp as they were."""
    folder = path.parent
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob(f".{path.name}.tmp-*"):  # a SIGKILLed writer's: one writer per run folder
        stale.unlink(missing_ok=True)
    with partial_file(path) as partial:
        with open(partial, "wb") as handle:
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        stamps = read_stamps(folder)
        replaced = stamps.get(path.name)
        stamps[path.name] = hashed_stamp(partial)  # a rename keeps size, mtime and content
        if replaced is not None:
            stamps[path.name + REPLACED] = replaced
        write_stamps(folder, stamps)
        os.replace(partial, path)
    sync_folder(folder)
    if stamps.pop(path.name + REPLACED, None) is not None:
        write_stamps(folder, stamps)


def write_checkpoint(content: Any, path: Path) -> None:
    """``torch.save(content)`` to ``path`` through ``write_file``: serialised in memory first, so that an
    error of the disk is an ``OSError`` naming the file."""
    buffer = io.BytesIO()
    torch.save(content, buffer)
    write_file(path, buffer.getbuffer())


def remove_checkpoint(path: Path) -> None:
    """Delete ``path`` and its stamp."""
    path.unlink(missing_ok=True)
    stamps = read_stamps(path.parent)
    if stamps.pop(path.name, None) is not None:
        stamps.pop(path.name + REPLACED, None)
        write_stamps(path.parent, stamps)


def checkpoint_fault(path: Path) -> str | None:
    """Why ``path`` cannot be trusted, or None: it is missing, or its size or SHA-256 differs from every
    stamp recorded for it (the new file's and, while a rename is pending, the old one's). A file
    without a stamp has none to fail: None."""
    stamps = read_stamps(path.parent)
    recorded = [stamps[key] for key in (path.name, path.name + REPLACED) if key in stamps]
    if not recorded:
        return None
    if not path.is_file():
        return "is missing"
    size = path.stat().st_size
    if all(stamp["bytes"] != size for stamp in recorded):
        return f"is truncated or altered ({size} bytes, {recorded[0]['bytes']} recorded)"
    if hashed_stamp(path)["sha256"] not in {stamp["sha256"] for stamp in recorded}:
        return "fails its SHA-256 (altered since it was written)"
    return None


def check_checkpoint(path: Path) -> None:
    """A ``CorruptCheckpointError`` (one line) when ``path`` has a fault (``checkpoint_fault``)."""
    fault = checkpoint_fault(path)
    if fault is not None:
        raise CorruptCheckpointError(f"the checkpoint {path} {fault}; it is not loaded")


def saved_checkpoints(folder: Path) -> list[Path]:
    """The resumable checkpoints present in ``folder``, newest first (``RESUMABLE``); unverified."""
    paths = (folder / f"{name}.ckpt" for name in RESUMABLE)
    return [path for path in paths if path.is_file()]


def newest_verified(folder: Path) -> tuple[Path | None, list[tuple[Path, str]]]:
    """The newest resumable checkpoint of ``folder`` that verifies (None if none does), and each newer
    one that failed with its fault."""
    failed = []
    for path in saved_checkpoints(folder):
        fault = checkpoint_fault(path)
        if fault is None:
            return path, failed
        failed.append((path, fault))
    return None, failed


def resumable_checkpoint(directory: Path) -> Path | None:
    """The checkpoint a run in ``directory`` continues from: the newest of ``RESUMABLE`` that verifies,
    with one line naming the newer one that failed; None when it has none; a ``CorruptCheckpointError``
    when none verifies."""
    good, failed = newest_verified(directory / CHECKPOINT_DIR)
    if failed and good is None:
        raise CorruptCheckpointError(
            f"resume: no checkpoint of {directory} verifies ({failed[0][0].name} {failed[0][1]}); "
            "resume=null starts afresh"
        )
    if failed:
        path, fault = failed[0]
        log.warning("resume: %s %s; continuing from %s, the newest that verifies", path, fault, good)
    return good


class VerifiedCheckpointIO(TorchCheckpointIO):
    """Lightning's checkpoint I/O, atomic and stamped when saving, verified when loading."""

    def save_checkpoint(self, checkpoint: dict[str, Any], path: Any, storage_options: Any = None) -> None:
        if storage_options is not None:
            raise TypeError(f"{type(self).__name__} takes no storage_options")
        write_checkpoint(checkpoint, Path(path))

    def load_checkpoint(self, path: Any, *args: Any, **kwargs: Any) -> Any:
        check_checkpoint(Path(path))
        return super().load_checkpoint(path, *args, **kwargs)

    def remove_checkpoint(self, path: Any) -> None:
        remove_checkpoint(Path(path))
