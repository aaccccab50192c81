"""Checkpoint files a run can trust (``lra.job.checkpoint_files``): atomic writes, SHA-256 stamps beside
them, verification before loading, and no partial file left by a full disk (``lra.job.disk_full``)."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest
import torch

from data_prep.storage import write_json
from lra.config.errors import CorruptCheckpointError
from lra.job import checkpoint_files
from lra.job.checkpoint_files import (
    REPLACED,
    STAMPS_FILE,
    VerifiedCheckpointIO,
    checkpoint_fault,
    newest_verified,
    read_stamps,
    remove_checkpoint,
    resumable_checkpoint,
    write_checkpoint,
)
from lra.job.disk_full import disk_full_errors, disk_full_line


def flip_a_byte(path: Path) -> None:
    """Overwrite the middle byte of ``path`` (inside a tensor's data, for a checkpoint), keeping its size
    and mtime."""
    status = path.stat()
    content = bytearray(path.read_bytes())
    content[len(content) // 2] ^= 0xFF
    path.write_bytes(bytes(content))
    os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns))
    assert path.stat().st_size == status.st_size and path.stat().st_mtime_ns == status.st_mtime_ns


def leftovers(folder: Path) -> list[str]:
    """Hidden temporary files in ``folder``: what an interrupted write would leave."""
    return sorted(path.name for path in folder.iterdir() if path.name.startswith("."))


def test_a_checkpoint_is_stamped_and_any_changed_byte_fails_it(tmp_path):
    path = tmp_path / "last.ckpt"
    (tmp_path / ".last.ckpt.tmp-1").write_bytes(b"partial")  # left by a writer killed with SIGKILL
    write_checkpoint({"weights": torch.arange(1000.0)}, path)
    stamp = read_stamps(tmp_path)["last.ckpt"]
    assert set(stamp) == {"bytes", "mtime_ns", "sha256"} and stamp["bytes"] == path.stat().st_size
    assert checkpoint_fault(path) is None and leftovers(tmp_path) == []
    flip_a_byte(path)
    assert checkpoint_fault(path) == "fails its SHA-256 (altered since it was written)"
    with pytest.raises(CorruptCheckpointError, match="fails its SHA-256 .*; it is not loaded"):
        VerifiedCheckpointIO().load_checkpoint(path)
    path.write_bytes(path.read_bytes()[:500])
    assert checkpoint_fault(path).startswith("is truncated or altered (500 bytes")
    unstamped = tmp_path / "elsewhere.ckpt"
    torch.save({"x": 1}, unstamped)
    assert checkpoint_fault(unstamped) is None  # no stamp to fail: a checkpoint from outside a run
    remove_checkpoint(path)
    assert not path.exists() and "last.ckpt" not in read_stamps(tmp_path)


def test_the_old_checkpoint_stays_until_the_new_one_is_in_place(tmp_path, monkeypatch):
    path = tmp_path / "last.ckpt"
    write_checkpoint({"step": 1}, path)
    old = path.read_bytes()

    replace = os.replace

    def killed(source, target):
        if Path(target) == path:
            raise KeyboardInterrupt  # a signal between the stamp and the rename
        replace(source, target)

    monkeypatch.setattr(checkpoint_files.os, "replace", killed)
    with pytest.raises(KeyboardInterrupt):
        write_checkpoint({"step": 2}, path)
    assert path.read_bytes() == old and leftovers(tmp_path) == []
    stamps = read_stamps(tmp_path)
    assert set(stamps) == {"last.ckpt", "last.ckpt" + REPLACED}  # the new stamp and the old one's
    assert checkpoint_fault(path) is None  # the old file verifies against its kept stamp
    monkeypatch.undo()
    write_checkpoint({"step": 3}, path)
    assert set(read_stamps(tmp_path)) == {"last.ckpt"} and checkpoint_fault(path) is None
    assert torch.load(path, weights_only=True) == {"step": 3}


def no_space(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_a_full_disk_leaves_the_old_checkpoint_and_no_partial_file(tmp_path, monkeypatch):
    path = tmp_path / "checkpoints" / "last.ckpt"
    write_checkpoint({"step": 1}, path)
    monkeypatch.setattr(checkpoint_files.os, "fsync", no_space)  # the write layer fails half-way
    with pytest.raises(OSError) as raised:
        write_checkpoint({"step": 2}, path)
    assert raised.value.errno == errno.ENOSPC and raised.value.filename == str(path)
    assert leftovers(path.parent) == [] and checkpoint_fault(path) is None
    assert torch.load(path, weights_only=True) == {"step": 1}
    line = disk_full_line(disk_full_errors(raised.value), tmp_path)
    assert line == (
        f"no space left on device writing {path}; the last good checkpoint is {path}; "
        "free space, then resume=auto"
    )


def test_write_json_on_a_full_disk_leaves_no_partial_file_and_names_the_file(tmp_path, monkeypatch):
    target = tmp_path / "summary.json"
    monkeypatch.setattr(Path, "write_text", lambda self, text: (self.touch(), no_space())[1])
    with pytest.raises(OSError) as raised:
        write_json(target, {"status": "completed"})
    monkeypatch.undo()
    assert raised.value.filename == str(target) and list(tmp_path.iterdir()) == []


def test_disk_full_is_found_through_the_errors_raised_on_the_way_out(tmp_path):
    first = OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "metrics.csv"))
    try:
        try:
            raise first
        except OSError:
            raise RuntimeError("saving on exception failed") from None
    except RuntimeError as outer:
        outer.__context__ = first  # ``from None`` only hides it from the traceback
        found = disk_full_errors(outer)
    assert found == [first]
    assert disk_full_line(found, tmp_path).startswith(f"no space left on device writing {first.filename};")
    assert "the last good checkpoint is none;" in disk_full_line(found, tmp_path)
    assert disk_full_errors(RuntimeError("unrelated")) == []


def test_resume_falls_back_to_the_newest_checkpoint_that_verifies(tmp_path, caplog):
    folder = tmp_path / "checkpoints"
    for name in ("pretrain-last", "best", "last"):
        write_checkpoint({"name": name}, folder / f"{name}.ckpt")
    assert resumable_checkpoint(tmp_path) == folder / "last.ckpt"
    flip_a_byte(folder / "last.ckpt")
    with caplog.at_level("WARNING", logger="lra.job.checkpoint_files"):
        assert resumable_checkpoint(tmp_path) == folder / "best.ckpt"
    (line,) = caplog.messages
    assert (
        f"{folder / 'last.ckpt'} fails its SHA-256" in line
        and f"continuing from {folder / 'best.ckpt'}" in line
    )
    (folder / "best.ckpt").write_bytes(b"")
    assert newest_verified(folder)[0] == folder / "pretrain-last.ckpt"
    flip_a_byte(folder / "pretrain-last.ckpt")
    with pytest.raises(CorruptCheckpointError, match=r"no checkpoint of .* verifies \(last.ckpt fails"):
        resumable_checkpoint(tmp_path)
    assert json.loads((folder / STAMPS_FILE).read_text()).keys() == {
        "pretrain-last.ckpt",
        "best.ckpt",
        "last.ckpt",
    }
