"""The prepared-data storage layer: atomic writes, checksums, and errors that name the fix."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

import data_prep
from data_prep import reader as prepared_module
from data_prep import storage
from data_prep.storage import (
    ARRAY_KINDS,
    STAMPS_FILE,
    CorruptDataError,
    DataNotPreparedError,
    PreparedWriter,
    token_dtype,
)

COMMAND = "python -m data_prep listops --root ROOT --name tiny --num-train 4"


def meta(**extra) -> dict:
    base = {"task": "listops", "vocab_size": 16, "num_classes": 10, "seq_len": 5, "source": "test"}
    return {**base, "command": COMMAND, **extra}


def write_tiny(root: Path, name: str = "tiny", fill: int = 3) -> None:
    with PreparedWriter(root, name, meta()) as writer:
        for split, count in (("train", 4), ("val", 2), ("test", 2)):
            arrays = writer.create_split(split, count, (5,), 16)
            arrays.tokens[:, :3] = fill
            arrays.lengths[:] = 3
            arrays.labels[:] = np.arange(count)


def test_round_trip_with_memory_mapped_arrays(tmp_path):
    write_tiny(tmp_path)
    train = data_prep.load("tiny", "train", root=tmp_path)
    assert len(train) == 4 and isinstance(train.tokens, np.memmap) and train.tokens.dtype == np.uint8
    tokens, length, label = train[2]
    assert tokens.tolist() == [3, 3, 3, 0, 0] and length == 3 and label == 2
    assert tokens.dtype == length.dtype == label.dtype == np.int64  # what the harness trains on
    assert train.meta["counts"] == {"train": 4, "val": 2, "test": 2} and train.meta["command"] == COMMAND
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny"]  # no temporary folder left


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda path: path.write_bytes(path.read_bytes()[:-3]), "truncated"),
        (lambda path: path.unlink(), "is missing"),
    ],
)
def test_damaged_arrays_are_detected_and_name_the_rebuild_command(tmp_path, damage, message):
    write_tiny(tmp_path)
    damage(tmp_path / "tiny" / "train.tokens.npy")
    with pytest.raises(CorruptDataError) as error:
        data_prep.load("tiny", "train", root=tmp_path)
    assert message in str(error.value) and COMMAND in str(error.value)
    data_prep.load("tiny", "val", root=tmp_path)  # other splits still load


def test_interrupted_write_leaves_nothing_that_loads_and_keeps_the_older_set(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        with PreparedWriter(tmp_path, "fresh", meta()) as writer:
            writer.create_split("train", 4, (5,), 16)
            raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(DataNotPreparedError):
        data_prep.load("fresh", "train", root=tmp_path)
    write_tiny(tmp_path, fill=3)
    with pytest.raises(RuntimeError):
        with PreparedWriter(tmp_path, "tiny", meta()) as writer:
            writer.create_split("train", 4, (5,), 16).tokens[:] = 9
            raise RuntimeError("stopped half-way")
    assert data_prep.load("tiny", "train", root=tmp_path)[0][0].tolist() == [3, 3, 3, 0, 0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny"]


def test_rewriting_replaces_the_set(tmp_path):
    write_tiny(tmp_path, fill=3)
    write_tiny(tmp_path, fill=7)
    assert data_prep.load("tiny", "test", root=tmp_path)[1][0].tolist() == [7, 7, 7, 0, 0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny"]


def test_missing_set_names_the_command_that_prepares_it(tmp_path):
    with pytest.raises(DataNotPreparedError) as error:
        data_prep.load("listops", "train", root=tmp_path)
    release, generator = str(error.value).split("Prepare it with: ")[1].split(" or ")
    assert release == f"python -m data_prep listops --source {tmp_path}/lra_release --root {tmp_path}"
    assert generator == f"python -m data_prep listops --name listops-generated --root {tmp_path}"
    with pytest.raises(DataNotPreparedError, match="python -m data_prep text --source"):
        data_prep.load("text", "train", root=tmp_path)
    assert data_prep.how_to_prepare("pathfinder-easy", tmp_path).startswith("python -m data_prep pathfinder")


def test_missing_split_and_broken_meta_are_corrupt_data(tmp_path):
    with PreparedWriter(tmp_path, "only-test", meta()) as writer:
        writer.create_split("test", 1, (5,), 16)
    with pytest.raises(CorruptDataError, match="has no 'train' split"):
        data_prep.load("only-test", "train", root=tmp_path)
    (tmp_path / "only-test" / "meta.json").write_text("{not json")
    with pytest.raises(CorruptDataError, match="not valid JSON"):
        data_prep.load("only-test", "test", root=tmp_path)


def test_meta_that_disagrees_with_the_arrays_is_corrupt(tmp_path):
    write_tiny(tmp_path)
    meta_file = tmp_path / "tiny" / "meta.json"
    recorded = json.loads(meta_file.read_text())
    recorded["counts"]["train"] = 5
    meta_file.write_text(json.dumps(recorded))
    with pytest.raises(CorruptDataError, match="disagree in length"):
        data_prep.load("tiny", "train", root=tmp_path)


def test_bad_writer_input_is_a_clear_value_error(tmp_path):
    with pytest.raises(ValueError, match=r"lacks \['command'\]"):
        PreparedWriter(tmp_path, "x", {k: v for k, v in meta().items() if k != "command"})
    with PreparedWriter(tmp_path, "x", meta()) as writer:
        with pytest.raises(ValueError, match="split must be one of"):
            writer.create_split("dev", 1, (5,), 16)
    with pytest.raises(ValueError, match="split must be one of"):
        data_prep.load("x", "dev", root=tmp_path)
    assert token_dtype(256) == np.uint8 and token_dtype(257) == np.uint16
    with pytest.raises(ValueError, match="would have no train and no test examples: its source holds none"):
        with PreparedWriter(tmp_path, "empty", meta()) as writer:
            for split in ("train", "val", "test"):
                writer.create_split(split, 0, (5,), 16)
    assert not (tmp_path / "empty").exists()


def test_split_pickles_without_its_arrays_and_batches_as_int64_tensors(tmp_path):
    write_tiny(tmp_path)
    train = data_prep.PreparedSet("tiny", tmp_path).split("train")
    payload = pickle.dumps(train)
    assert len(payload) < 1000  # its location, not its arrays (what a spawned loader worker receives)
    copy = pickle.loads(payload)
    for original, restored in zip(train[3], copy[3], strict=True):
        assert np.array_equal(original, restored)
    tokens, lengths, labels = next(iter(DataLoader(train, batch_size=4)))
    assert (tokens.shape, lengths.shape, labels.shape) == ((4, 5), (4,), (4,))
    assert tokens.dtype == lengths.dtype == labels.dtype == torch.int64
    assert labels.tolist() == [0, 1, 2, 3] and lengths.tolist() == [3, 3, 3, 3]


def test_meta_and_stamps_are_read_once_and_each_split_checked_once(tmp_path, monkeypatch):
    write_tiny(tmp_path)
    (tmp_path / "tiny" / STAMPS_FILE).unlink()  # a set written before stamps: each array hashed once
    reads, digests = [], []
    real_read, real_digest = Path.read_text, storage.file_digest

    def counted_read(path: Path, *args, **kwargs) -> str:
        reads.append(path.name)
        return real_read(path, *args, **kwargs)

    def counted_digest(path: Path) -> str:
        digests.append(path.name)
        return real_digest(path)

    monkeypatch.setattr(Path, "read_text", counted_read)
    monkeypatch.setattr(storage, "file_digest", counted_digest)
    prepared = data_prep.PreparedSet("tiny", tmp_path)
    for _ in range(3):
        prepared.split("train")
    prepared.split("test")
    assert reads == ["meta.json", STAMPS_FILE]
    assert sorted(digests) == sorted(
        f"{split}.{kind}.npy" for split in ("train", "test") for kind in ARRAY_KINDS
    )
    digests.clear()
    data_prep.PreparedSet("tiny", tmp_path).split("train")
    assert digests == []  # stamped by the first check


def test_majority_share_is_recorded_and_added_to_sets_written_before_it(tmp_path, monkeypatch):
    write_tiny(tmp_path)  # labels 0..N-1: every label once
    shares = {"train": 0.25, "val": 0.5, "test": 0.5}
    meta_file = tmp_path / "tiny" / "meta.json"
    assert json.loads(meta_file.read_text())["majority_share"] == shares
    older = {
        key: value for key, value in json.loads(meta_file.read_text()).items() if key != "majority_share"
    }
    meta_file.write_text(json.dumps(older))

    def read_only(directory: Path, meta: dict) -> None:
        raise PermissionError(f"{directory} is read-only")

    monkeypatch.setattr(prepared_module, "write_meta", read_only)
    assert data_prep.PreparedSet("tiny", tmp_path).majority_share == shares  # computed, not written
    assert "majority_share" not in json.loads(meta_file.read_text())
    monkeypatch.undo()
    assert data_prep.PreparedSet("tiny", tmp_path).majority_share == shares
    assert json.loads(meta_file.read_text()) == {**older, "majority_share": shares}  # written back
    assert not [path for path in (tmp_path / "tiny").iterdir() if path.name.startswith(".")]  # no temp file
