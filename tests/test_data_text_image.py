"""Text (IMDB bytes) and Image (CIFAR-10 grayscale) readers, on format-exact sources (built here, and the
real public samples where ../shared/fixtures is beside the checkout) and on hand-made corner cases."""

from __future__ import annotations

import io
import pickle
import tarfile
from pathlib import Path

import numpy as np

import data_prep
from data_prep.commands import main


def prepare(root: Path, *argv: str) -> dict:
    assert main([argv[0], "--root", str(root), *argv[1:]]) == 0
    name = argv[argv.index("--name") + 1] if "--name" in argv else argv[0]
    return {split: data_prep.load(name, split, root=root) for split in ("train", "val", "test")}


def review_files(imdb: Path, split: str) -> list[Path]:
    return sorted((imdb / split).glob("neg/*.txt")) + sorted((imdb / split).glob("pos/*.txt"))


# ---------------------------------------------------------------- text


def test_text_tokens_are_bytes_plus_one_truncated_with_non_ascii_kept(tmp_path, imdb_folder):
    splits = prepare(tmp_path, "text", "--source", str(imdb_folder), "--val-fraction", "0")
    for split in ("train", "test"):
        files = review_files(imdb_folder, split)
        data = splits[split]
        assert len(data) == 6 and data.tokens.shape == (6, 4000)
        assert data.labels.tolist() == [0, 0, 0, 1, 1, 1]
        truncated = 0
        for i, path in enumerate(files):
            raw = path.read_bytes()
            n = min(len(raw), 4000)
            assert data.lengths[i] == n
            assert np.array_equal(data.tokens[i, :n], np.frombuffer(raw[:n], np.uint8).astype(np.int64) + 1)
            assert np.all(data.tokens[i, n:] == 0)
            truncated += len(raw) > 4000
        assert data.meta["truncated"][split] == truncated > 0
    assert len(splits["val"]) == 0
    # Non-ASCII UTF-8 stays as its bytes (e.g. the 2-byte sequence of an accented letter).
    assert int(np.max(splits["train"].tokens)) > 0x80 + 1
    meta = splits["train"].meta
    assert meta["vocab_size"] == 257 and meta["num_classes"] == 2 and meta["classes"] == ["neg", "pos"]


def test_text_validation_split_is_seeded_and_disjoint(tmp_path, imdb_folder):
    source = ["--source", str(imdb_folder), "--val-fraction", "0.5"]
    first = prepare(tmp_path / "a", "text", *source, "--seq-len", "64")
    again = prepare(tmp_path / "b", "text", *source, "--seq-len", "64")
    other = prepare(tmp_path / "c", "text", *source, "--seed", "3")
    assert len(first["train"]) == len(first["val"]) == 3
    rows = {
        split: {bytes(np.asarray(first[split].tokens[i])) for i in range(3)} for split in ("train", "val")
    }
    assert not rows["train"] & rows["val"] and len(rows["train"] | rows["val"]) == 6
    assert np.array_equal(first["val"].tokens, again["val"].tokens)
    assert first["val"].meta["seed"] == 0 and first["val"].meta["val_fraction"] == 0.5
    assert not np.array_equal(first["val"].tokens[:, :64], other["val"].tokens[:, :64])


def add_file(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def test_text_reads_the_archive_and_ignores_unlabelled_files(tmp_path):
    reviews = {
        "aclImdb/train/pos/2_9.txt": "Great film, très bien!".encode(),
        "aclImdb/train/neg/1_2.txt": b"Dull.",
        "aclImdb/train/unsup/5_0.txt": b"not labelled",
        "aclImdb/train/urls_pos.txt": b"http://example.org",
        "aclImdb/test/pos/7_8.txt": b"Fine <br /> fine",
        "aclImdb/test/neg/3_1.txt": b"x" * 30,
    }
    archive = tmp_path / "aclImdb_v1.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for name, data in reviews.items():
            add_file(tar, name, data)
    splits = prepare(
        tmp_path / "data", "text", "--source", str(archive), "--val-fraction", "0", "--seq-len", "20"
    )
    train, test = splits["train"], splits["test"]
    assert train.labels.tolist() == [0, 1] and test.labels.tolist() == [0, 1]
    great = "Great film, très bien!".encode()[:20]
    assert (
        train.lengths.tolist() == [5, 20]
        and bytes((np.asarray(train.tokens[1]) - 1).astype(np.uint8)) == great
    )
    assert test.meta["truncated"] == {"train": 1, "val": 0, "test": 1}
    assert [p.name for p in (tmp_path / "data").iterdir()] == ["text"]  # the unpacked copy is gone


def test_text_missing_source_is_a_clear_error(tmp_path, capsys, imdb_folder):
    assert main(["text", "--root", str(tmp_path), "--source", str(tmp_path / "nowhere")]) == 1
    assert "does not exist" in capsys.readouterr().err
    assert main(["text", "--root", str(tmp_path), "--source", str(imdb_folder / "train")]) == 1
    assert "found no train/pos" in capsys.readouterr().err


# ---------------------------------------------------------------- image


def gray_formula(rgb: np.ndarray) -> np.ndarray:
    """tf.image.rgb_to_grayscale on uint8, in float64: weights on [0, 1], times 255.5, truncated."""
    r, g, b = (rgb.reshape(len(rgb), 3, 1024)[:, c].astype(np.float64) / 255 for c in range(3))
    return np.floor((0.2989 * r + 0.5870 * g + 0.1140 * b) * 255.5)


def read_batches(archive: Path) -> dict[str, dict]:
    with tarfile.open(archive) as tar:
        return {
            Path(m.name).name: pickle.load(tar.extractfile(m), encoding="bytes") for m in tar if m.isfile()
        }


def test_image_from_the_official_archive_layout(tmp_path, cifar_archive):
    splits = prepare(tmp_path, "image", "--source", str(cifar_archive))
    batches = read_batches(cifar_archive)
    test = splits["test"]
    assert test.labels[:5].tolist() == [3, 8, 8, 0, 6] and len(test) == 40
    assert test.tokens.shape == (40, 1024) and test.tokens.dtype == np.uint8
    assert np.all(np.asarray(test.lengths) == 1024)
    expected = gray_formula(np.asarray(batches["test_batch"][b"data"]))
    difference = np.abs(expected - test.tokens)
    assert difference.max() <= 1 and np.mean(difference == 0) > 0.999  # float32 vs float64 rounding
    train_labels = np.concatenate([batches[f"data_batch_{i}"][b"labels"] for i in range(1, 6)])
    assert len(splits["train"]) == 54 and len(splits["val"]) == 6
    assert np.array_equal(np.concatenate([splits["train"].labels, splits["val"].labels]), train_labels)
    train_gray = np.concatenate(
        [gray_formula(np.asarray(batches[f"data_batch_{i}"][b"data"])) for i in range(1, 6)]
    )
    assert np.abs(train_gray[54:] - splits["val"].tokens).max() <= 1
    assert splits["train"].meta["vocab_size"] == 256 and splits["train"].meta["classes"][3] == "cat"


def write_batch(folder: Path, name: str, data: np.ndarray, labels: list[int]) -> None:
    with open(folder / name, "wb") as handle:
        pickle.dump({b"data": data, b"labels": labels, b"filenames": [b"x.png"] * len(labels)}, handle)


def test_image_grayscale_of_known_colours_and_row_major_order(tmp_path):
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    # (R, G, B) -> gray by hand: 0.9999 * 255.5 = 255.47 -> 255; 0.2989 * 255.5 = 76.37 -> 76;
    # (1, 1, 1) -> 0.9999 * 255.5 / 255 = 1.0018 -> 1; 0.5870 * 255.5 = 149.98 -> 149 (truncated,
    # not rounded).
    colours = {(255, 255, 255): 255, (255, 0, 0): 76, (1, 1, 1): 1, (0, 255, 0): 149, (0, 0, 0): 0}
    image = np.zeros((3, 32, 32), dtype=np.uint8)
    for position, (rgb, _) in enumerate(colours.items()):
        image[:, 0, position] = rgb  # first row, left to right
    image[:, 1, 0] = (0, 0, 255)  # first pixel of the second row: 0.1140 * 255.5 = 29.13 -> 29
    for i in range(1, 6):
        write_batch(folder, f"data_batch_{i}", np.repeat(image.reshape(1, -1), 2, axis=0), [i, i])
    write_batch(folder, "test_batch", image.reshape(1, -1), [7])
    splits = prepare(tmp_path / "data", "image", "--source", str(tmp_path))
    row = np.asarray(splits["test"].tokens[0])
    assert row[: len(colours)].tolist() == list(colours.values())
    assert row[32] == 29 and row[33] == 0
    assert splits["train"].labels.tolist() == [1, 1, 2, 2, 3, 3, 4, 4, 5] and splits[
        "val"
    ].labels.tolist() == [5]
    assert splits["test"].meta["classes"] is None


def test_image_rejects_a_batch_without_data(tmp_path, capsys):
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        with open(folder / name, "wb") as handle:
            pickle.dump({b"labels": [0]}, handle)
    assert main(["image", "--root", str(tmp_path / "data"), "--source", str(folder)]) == 1
    assert "data_batch_1 is not a CIFAR-10 python batch" in capsys.readouterr().err


def test_a_truncated_batch_stops_with_one_line_naming_it_and_writes_nothing(tmp_path, capsys):
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    image = np.zeros((2, 3072), dtype=np.uint8)
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        write_batch(folder, name, image, [0, 1])
    damaged = folder / "data_batch_3"
    damaged.write_bytes(damaged.read_bytes()[: damaged.stat().st_size // 2])
    root = tmp_path / "data"
    assert main(["image", "--root", str(root), "--source", str(folder)]) == 1
    last_line = capsys.readouterr().err.strip().splitlines()[-1]  # after the closed progress bar
    assert last_line.startswith(f"data_prep image: error: {damaged} is not a readable pickle (truncated")
    assert not root.exists() or list(root.iterdir()) == []
