"""Pathfinder: the LRA release reader on a tiny tree in the exact format, and the built-in generator."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import data_prep
from data_prep.commands import main
from data_prep.pathfinder import read_image
from data_prep.pathfinder_generator import (
    CLEARANCE,
    CONTOUR_LENGTHS,
    DASH_LENGTH,
    GAP_LENGTH,
    MARKER_RADIUS,
    generate_chunks,
    generate_image,
    generate_range,
    image_rng,
)

DIFFICULTY = "curv_contour_length_14"


def write_png(path: Path, pixels: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(pixels).save(path)  # uint8 (H, W): 8-bit grayscale


def build_release(root: Path, num_per_batch: int = 12) -> dict[bytes, int]:
    """``root/lra_release/lra_release/pathfinder32/curv_contour_length_14`` with the metadata of
    image batch 0 in a text file, of batch 1 in a binary .npy array of str and of batch 3 in one
    of bytes, an empty metadata file 2, and one row of batch 1 naming a missing image.
    Returns {image bytes: label} of the present images."""
    folder = root / "lra_release" / "lra_release" / "pathfinder32" / DIFFICULTY
    (folder / "metadata").mkdir(parents=True)
    rng = np.random.default_rng(7)
    expected = {}
    rows: dict[int, list[list[str]]] = {0: [], 1: [], 3: []}
    for batch in rows:
        for i in range(num_per_batch):
            label = (i + batch) % 2
            pixels = rng.integers(0, 256, size=(32, 32), dtype=np.uint8)
            write_png(folder / "imgs" / str(batch) / f"sample_{i}.png", pixels)
            expected[pixels.tobytes()] = label
            rows[batch].append([f"imgs/{batch}", f"sample_{i}.png", str(i), str(label), "14", "1.5"])
    rows[1].append(["imgs/1", "sample_missing.png", "99", "1", "14", "1.5"])
    (folder / "metadata" / "0.npy").write_text("".join(" ".join(row) + "\n" for row in rows[0]))
    np.save(folder / "metadata" / "1.npy", np.array(rows[1]))
    (folder / "metadata" / "2.npy").write_text("")
    np.save(folder / "metadata" / "3.npy", np.array(rows[3], dtype=bytes))
    return expected


def load_all(name: str, root: Path) -> dict[str, data_prep.PreparedSplit]:
    return {split: data_prep.load(name, split, root=root) for split in ("train", "val", "test")}


# ---------------------------------------------------------------- the LRA release reader


def test_reader_reads_text_and_binary_metadata_into_a_seeded_80_10_10_split(tmp_path):
    expected = build_release(tmp_path)  # 36 present images
    source = tmp_path / "lra_release"
    assert main(["pathfinder", "--source", str(source), "--root", str(tmp_path / "data")]) == 0
    splits = load_all("pathfinder", tmp_path / "data")
    assert [len(splits[split]) for split in ("train", "val", "test")] == [30, 3, 3]
    seen = []
    for data in splits.values():
        assert data.tokens.shape[1:] == (1024,) and data.tokens.dtype == np.uint8
        assert np.all(data.lengths == 1024)
        for tokens, _, label in data:
            pixels = tokens.astype(np.uint8).tobytes()
            assert expected[pixels] == label  # tokens = pixels row-major, with their label
            seen.append(pixels)
    assert sorted(seen) == sorted(expected)  # every image exactly once
    meta = splits["train"].meta
    assert meta["skipped"] == {"empty_metadata_files": 1, "missing_images": 1}
    assert meta["metadata_files"] == 4
    assert (meta["vocab_size"], meta["num_classes"], meta["seq_len"]) == (256, 2, 1024)
    assert (meta["difficulty"], meta["contour_length"], meta["seed"]) == ("hard", 14, 0)
    assert "--seed 0" in meta["command"] and "--difficulty hard" in meta["command"]

    # Same seed, same split; another seed, another order.
    assert main(["pathfinder", "--source", str(source), "--root", str(tmp_path / "again")]) == 0
    again = load_all("pathfinder", tmp_path / "again")
    assert np.array_equal(again["train"].tokens, splits["train"].tokens)
    assert main(["pathfinder", "--source", str(source), "--root", str(tmp_path / "b"), "--seed", "1"]) == 0
    other = load_all("pathfinder", tmp_path / "b")
    assert not np.array_equal(other["train"].tokens, splits["train"].tokens)


@pytest.mark.parametrize(
    "level", ["lra_release", "lra_release/lra_release", "lra_release/lra_release/pathfinder32", "difficulty"]
)
def test_reader_accepts_the_release_at_any_level(tmp_path, level):
    build_release(tmp_path, num_per_batch=5)
    folder = tmp_path / "lra_release/lra_release/pathfinder32" / DIFFICULTY
    source = folder if level == "difficulty" else tmp_path / level
    assert main(["pathfinder", "--source", str(source), "--root", str(tmp_path / "data")]) == 0
    meta = json.loads((tmp_path / "data" / "pathfinder" / "meta.json").read_text())
    assert meta["source"] == str(folder.resolve()) and sum(meta["counts"].values()) == 15


def test_reader_names_the_set_by_difficulty_and_reads_it_from_a_difficulty_folder(tmp_path):
    build_release(tmp_path, num_per_batch=5)
    pathfinder32 = tmp_path / "lra_release/lra_release/pathfinder32"
    (pathfinder32 / DIFFICULTY).rename(pathfinder32 / "curv_baseline")
    root = tmp_path / "data"
    assert main(["pathfinder", "--source", str(pathfinder32 / "curv_baseline"), "--root", str(root)]) == 0
    assert data_prep.load("pathfinder-easy", "test", root=root).meta["difficulty"] == "easy"
    assert main(["pathfinder", "--source", str(pathfinder32), "--root", str(root)]) == 1  # no hard folder
    hard = ["--difficulty", "hard", "--root", str(root)]
    assert main(["pathfinder", "--source", str(pathfinder32 / "curv_baseline"), *hard]) == 1


def test_reader_rejects_a_corrupt_or_wrongly_sized_png_naming_it(tmp_path, capsys):
    build_release(tmp_path, num_per_batch=5)
    images = tmp_path / "lra_release/lra_release/pathfinder32" / DIFFICULTY / "imgs"
    corrupt = images / "0" / "sample_3.png"
    corrupt.write_bytes(b"\x89PNG\r\n\x1a\n" + b"not really a png")
    assert main(["pathfinder", "--source", str(tmp_path / "lra_release"), "--root", str(tmp_path)]) == 1
    assert str(corrupt) in capsys.readouterr().err
    assert not (tmp_path / "pathfinder").exists()  # nothing half-written

    small = images / "small.png"
    write_png(small, np.zeros((16, 32), dtype=np.uint8))
    with pytest.raises(ValueError, match="small.png"):
        read_image(small)
    rgb = images / "rgb.png"
    Image.fromarray(np.zeros((32, 32, 3), dtype=np.uint8)).save(rgb)
    with pytest.raises(ValueError, match="rgb.png.*grayscale"):
        read_image(rgb)


def test_reader_rejects_bad_metadata_rows_naming_file_and_line(tmp_path, capsys):
    build_release(tmp_path, num_per_batch=5)
    metadata = tmp_path / "lra_release/lra_release/pathfinder32" / DIFFICULTY / "metadata"
    (metadata / "0.npy").write_text("imgs/0 sample_0.png 0 1\nimgs/0 sample_1.png 1 7\n")
    assert main(["pathfinder", "--source", str(tmp_path / "lra_release"), "--root", str(tmp_path)]) == 1
    assert f"{metadata / '0.npy'}:2" in capsys.readouterr().err


def test_reader_refuses_pickled_metadata_arrays(tmp_path, capsys):
    build_release(tmp_path, num_per_batch=5)
    metadata = tmp_path / "lra_release/lra_release/pathfinder32" / DIFFICULTY / "metadata"
    np.save(metadata / "1.npy", np.array([["imgs/1", "sample_0.png", 0, 1]], dtype=object))
    assert main(["pathfinder", "--source", str(tmp_path / "lra_release"), "--root", str(tmp_path)]) == 1
    assert str(metadata / "1.npy") in capsys.readouterr().err


def test_generator_options_are_refused_when_reading(tmp_path, capsys):
    build_release(tmp_path, num_per_batch=5)
    argv = ["pathfinder", "--source", str(tmp_path / "lra_release"), "--num", "10", "--root", str(tmp_path)]
    assert main(argv) == 1
    assert "--generate only" in capsys.readouterr().err


# ---------------------------------------------------------------- the generator


def ends(path: np.ndarray) -> np.ndarray:
    """The two ends (2, 2) of a recorded path (num_dashes, 2, 2)."""
    return np.stack([path[0, 0], path[-1, 1]])


def marked_ends(record) -> list[tuple[int, int]]:
    """(path index, end index) of each marker."""
    found = []
    for marker in record.markers:
        hits = [
            (p, e)
            for p, path in enumerate(record.paths)
            for e, end in enumerate(ends(path))
            if np.allclose(end, marker)
        ]
        assert len(hits) == 1, "each marker sits on exactly one path end"
        found.append(hits[0])
    return found


def dense_points(path: np.ndarray) -> np.ndarray:
    """Points every ~0.1 px along the dashes of a path (n, 2)."""
    t = np.linspace(0.0, 1.0, 16)[None, :, None]
    return (path[:, :1] + t * (path[:, 1:] - path[:, :1])).reshape(-1, 2)


@pytest.mark.parametrize("difficulty", list(CONTOUR_LENGTHS))
def test_generated_labels_match_the_recorded_paths(difficulty):
    for index in range(24):
        label = index % 2
        image, got, record = generate_image(image_rng(3, index), difficulty, 32, label=label)
        assert got == label and image.shape == (32, 32) and image.dtype == np.uint8
        # Two main paths of the difficulty's contour length, distractors shorter.
        assert [len(path) for path in record.paths[:2]] == [CONTOUR_LENGTHS[difficulty]] * 2
        assert all(len(path) < CONTOUR_LENGTHS[difficulty] for path in record.paths[2:])
        for path in record.paths:
            assert np.allclose(np.linalg.norm(path[:, 1] - path[:, 0], axis=1), DASH_LENGTH)
            assert np.allclose(np.linalg.norm(path[1:, 0] - path[:-1, 1], axis=1), GAP_LENGTH)
            assert np.all((path >= 0) & (path <= 31))
            # The dashes are drawn: a 1 px line lights a pixel next to its middle to at least half.
            corner = np.floor(path.mean(axis=1)).astype(int)
            around = [image[corner[:, 0] + dr, corner[:, 1] + dc] for dr in (0, 1) for dc in (0, 1)]
            assert np.all(np.max(around, axis=0) >= 127)
        # Both markers drawn at their recorded centres.
        centres = np.rint(record.markers).astype(int)
        assert np.all(image[centres[:, 0], centres[:, 1]] == 255)
        (first_path, first_end), (second_path, second_end) = marked_ends(record)
        assert {first_path, second_path} <= {0, 1}  # markers only on main paths
        if label == 1:
            assert first_path == second_path and first_end != second_end  # both ends of one path
        else:
            assert first_path != second_path  # one end of each of two paths
        # No two paths come close, nor a marker to another path or to the other path's marker:
        # the clearances hold up to the 0.71 px of checking on whole pixels and half the spacing of
        # the checked dash ends.
        slack = 0.71 + max(DASH_LENGTH, GAP_LENGTH) / 2
        points = [dense_points(path) for path in record.paths]
        for i in range(len(points)):
            for j in range(i):
                gap = np.linalg.norm(points[i][:, None] - points[j][None], axis=-1).min()
                assert gap > CLEARANCE - 2 * max(DASH_LENGTH, GAP_LENGTH) / 2
        for marker, (own, _) in zip(record.markers, marked_ends(record), strict=True):
            for other in set(range(len(points))) - {own}:
                assert (
                    np.linalg.norm(points[other] - marker, axis=1).min() > CLEARANCE + MARKER_RADIUS - slack
                )
        if label == 0:
            assert (
                np.linalg.norm(record.markers[0] - record.markers[1]) > CLEARANCE + 2 * MARKER_RADIUS - 0.71
            )


def test_generated_sets_are_balanced_reproducible_and_per_image():
    tokens, labels = generate_range(0, 0, 12, "hard", 32)
    assert tokens.shape == (12, 1024) and labels.tolist() == [0, 1] * 6
    assert np.array_equal(generate_range(0, 0, 12, "hard", 32)[0], tokens)  # same seed, same images
    assert not np.array_equal(generate_range(1, 0, 12, "hard", 32)[0], tokens)  # another seed
    assert len({row.tobytes() for row in tokens}) == 12
    # Image i depends only on (seed, i): the same whatever range or worker count makes it.
    assert np.array_equal(generate_range(0, 5, 12, "hard", 32)[0], tokens[5:])
    chunks = list(generate_chunks(12, 0, "hard", 32, workers=2, chunk_size=5))
    assert [start for start, _, _ in chunks] == [0, 5, 10]
    assert np.array_equal(np.concatenate([chunk for _, chunk, _ in chunks]), tokens)


def test_generator_scales_to_other_resolutions():
    image, label, record = generate_image(image_rng(0, 1), "intermediate", 64, label=1)
    assert image.shape == (64, 64)
    centres = np.rint(record.markers).astype(int)
    assert np.all(image[centres[:, 0], centres[:, 1]] == 255)
    assert np.allclose(np.linalg.norm(record.paths[0][:, 1] - record.paths[0][:, 0], axis=1), 2 * DASH_LENGTH)


def test_generator_rejects_unknown_options():
    with pytest.raises(ValueError, match="difficulty must be one of"):
        generate_image(image_rng(0, 0), "medium", 32)
    with pytest.raises(ValueError, match="resolution must be at least"):
        generate_image(image_rng(0, 0), "easy", 8)


def test_generated_set_is_prepared_split_and_loadable(tmp_path):
    root = tmp_path / "data"
    argv = ["pathfinder", "--generate", "--num", "40", "--seed", "5", "--workers", "1", "--root", str(root)]
    assert main(argv) == 0
    splits = load_all("pathfinder", root)
    train = data_prep.load("pathfinder", "train", root=root)
    assert [len(splits[split]) for split in ("train", "val", "test")] == [32, 4, 4]
    assert train.tokens.shape == (32, 1024) and np.all(train.lengths == 1024)
    tokens, labels = generate_range(5, 0, 40, "hard", 32)
    expected = {row.tobytes(): label for row, label in zip(tokens, labels, strict=True)}
    rows = [(row.astype(np.uint8).tobytes(), label) for data in splits.values() for row, _, label in data]
    assert sorted(rows) == sorted(expected.items())  # every generated image once, with its label
    assert sum(label for _, label in rows) == 20
    meta = train.meta
    assert meta["source"] == "generator" and meta["seed"] == 5 and meta["resolution"] == 32
    assert meta["difficulty"] == "hard" and meta["contour_length"] == 14
    assert "--generate" in meta["command"] and "--num 40" in meta["command"]
    # The recorded command rebuilds the same set.
    rebuilt = shlex.split(meta["command"])[3:]
    assert main(rebuilt) == 0
    assert np.array_equal(data_prep.load("pathfinder", "train", root=root).tokens, train.tokens)


def test_generated_set_names_follow_difficulty_and_resolution(tmp_path):
    argv = ["pathfinder", "--generate", "--num", "10", "--difficulty", "easy", "--resolution", "24"]
    assert main([*argv, "--workers", "1", "--root", str(tmp_path)]) == 0
    data = data_prep.load("pathfinder-easy-24px", "val", root=tmp_path)
    assert data.tokens.shape == (1, 576) and data.meta["seq_len"] == 576
