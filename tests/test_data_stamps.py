"""Stamps: a job start trusts each array's recorded (size, mtime_ns) and hashes only what changed;
``python -m data_prep verify`` hashes everything and refreshes the stamps."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import write_random_set

import data_prep
from data_prep import reader, storage
from data_prep.commands import main
from data_prep.storage import STAMPS_FILE, CorruptDataError

TRAIN = ("train.tokens.npy", "train.lengths.npy", "train.labels.npy")


@pytest.fixture
def hashed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the files hashed from here on, in order."""
    names: list[str] = []
    real_digest = storage.file_digest

    def counted_digest(path: Path, *args) -> str:
        names.append(path.name)
        return real_digest(path, *args)

    monkeypatch.setattr(storage, "file_digest", counted_digest)
    return names


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A freshly written tiny listops set."""
    write_random_set(tmp_path, "listops", seed=0)
    return tmp_path / "listops"


def rewrite(path: Path, content: bytes, mtime_ns: int) -> None:
    """Write ``content`` to ``path`` and set its mtime to ``mtime_ns``."""
    path.write_bytes(content)
    os.utime(path, ns=(mtime_ns, mtime_ns))


def same_size_change(path: Path) -> bytes:
    """``path``'s content with its last byte changed: a rewrite that keeps the size."""
    content = path.read_bytes()
    return content[:-1] + bytes([content[-1] ^ 0xFF])


def stamps(folder: Path) -> dict:
    return json.loads((folder / STAMPS_FILE).read_text())


def test_the_writer_stamps_every_array_and_a_job_start_hashes_none(folder, hashed):
    meta = json.loads((folder / "meta.json").read_text())
    recorded = stamps(folder)
    assert sorted(recorded) == sorted(meta["files"])
    for name, stamp in recorded.items():
        status = (folder / name).stat()
        assert stamp == {
            "bytes": status.st_size,
            "mtime_ns": status.st_mtime_ns,
            "sha256": meta["files"][name]["sha256"],
        }
    prepared = data_prep.PreparedSet("listops", folder.parent)
    for split in ("train", "val", "test"):
        prepared.split(split)
    assert hashed == []


def test_a_truncated_array_is_caught_without_hashing(folder, hashed):
    path = folder / "train.tokens.npy"
    mtime_ns = path.stat().st_mtime_ns
    rewrite(path, path.read_bytes()[:-7], mtime_ns)  # even with its stamped mtime
    with pytest.raises(CorruptDataError, match="truncated"):
        data_prep.load("listops", "train", root=folder.parent)
    assert hashed == []


def test_an_array_rewritten_since_its_stamp_is_hashed_and_caught(folder, hashed):
    path = folder / "train.labels.npy"
    mtime_ns = path.stat().st_mtime_ns
    rewrite(path, same_size_change(path), mtime_ns + 10**9)
    with pytest.raises(CorruptDataError, match="does not match its recorded SHA-256") as error:
        data_prep.load("listops", "train", root=folder.parent)
    assert "Rebuild with: tests/conftest.py" in str(error.value)
    assert hashed == ["train.labels.npy"]  # the other arrays' stamps hold


def test_an_array_touched_but_unchanged_is_hashed_once_and_stamped_again(folder, hashed):
    path = folder / "train.tokens.npy"
    mtime_ns = path.stat().st_mtime_ns + 10**9
    os.utime(path, ns=(mtime_ns, mtime_ns))
    data_prep.load("listops", "train", root=folder.parent)
    assert hashed == ["train.tokens.npy"]
    assert stamps(folder)["train.tokens.npy"]["mtime_ns"] == mtime_ns
    data_prep.load("listops", "train", root=folder.parent)
    assert hashed == ["train.tokens.npy"]  # not again


def test_a_stamp_of_other_content_or_a_broken_stamps_file_is_not_trusted(folder, hashed):
    recorded = stamps(folder)
    recorded["train.lengths.npy"]["sha256"] = "0" * 64  # a stamp left by another set under this name
    (folder / STAMPS_FILE).write_text(json.dumps(recorded))
    data_prep.load("listops", "train", root=folder.parent)
    assert hashed == ["train.lengths.npy"]
    (folder / STAMPS_FILE).write_text("[]")  # not stamps at all: every array of the split is hashed
    data_prep.load("listops", "train", root=folder.parent)
    assert hashed == ["train.lengths.npy", *TRAIN] and sorted(stamps(folder)) == sorted(TRAIN)


def test_a_set_without_stamps_is_hashed_once_or_at_every_start_when_read_only(folder, hashed, monkeypatch):
    (folder / STAMPS_FILE).unlink()  # written before stamps were recorded

    def read_only(directory: Path, stamps: dict) -> None:
        raise PermissionError(f"{directory} is read-only")

    monkeypatch.setattr(reader, "write_stamps", read_only)
    for _ in range(2):
        data_prep.load("listops", "train", root=folder.parent)
    assert hashed == list(TRAIN) * 2
    assert not (folder / STAMPS_FILE).exists()
    monkeypatch.setattr(reader, "write_stamps", storage.write_stamps)
    hashed.clear()
    for _ in range(2):
        data_prep.load("listops", "train", root=folder.parent)
    assert hashed == list(TRAIN)
    assert sorted(stamps(folder)) == sorted(TRAIN)  # only what was checked is stamped


def test_the_blind_spot_a_same_size_rewrite_with_its_old_mtime_is_caught_by_verify(folder, capsys):
    path = folder / "test.tokens.npy"
    rewrite(path, same_size_change(path), path.stat().st_mtime_ns)
    data_prep.load("listops", "test", root=folder.parent)  # trusted at a job start: the accepted blind spot
    assert main(["verify", "--root", str(folder.parent)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"verify: listops: {path} does not match its recorded SHA-256")
    assert err[-1] == "data_prep verify: error: 1 of 1 prepared sets failed: listops"


def test_verify_hashes_every_array_of_every_set_and_refreshes_the_stamps(tmp_path, hashed, capsys):
    for seed, task in enumerate(("listops", "retrieval")):
        write_random_set(tmp_path, task, seed)
    (tmp_path / ".listops.tmp-123").mkdir()  # an interrupted write: not a set
    (tmp_path / "retrieval" / STAMPS_FILE).unlink()
    hashed.clear()
    assert main(["verify", "--root", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split(" (")[0] for line in out] == ["verify: listops: ok", "verify: retrieval: ok"]
    assert len(hashed) == 18 and len(set(hashed)) == 9  # 9 arrays in each set, each hashed once
    meta = json.loads((tmp_path / "retrieval" / "meta.json").read_text())
    assert sorted(stamps(tmp_path / "retrieval")) == sorted(meta["files"])
    hashed.clear()
    assert main(["verify", "--root", str(tmp_path), "retrieval"]) == 0
    assert len(hashed) == 9  # named sets only, hashed whatever their stamps say


def test_verify_without_sets_or_with_an_unknown_one_says_so_in_one_line(tmp_path, capsys):
    assert main(["verify", "--root", str(tmp_path)]) == 1
    assert capsys.readouterr().err == f"data_prep verify: error: no prepared data sets under {tmp_path}\n"
    assert main(["verify", "--root", str(tmp_path), "nope"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("verify: nope: no prepared data set 'nope'") and len(err) == 2
