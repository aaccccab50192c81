"""Pathfinder: the LRA release reader on a tiny tree in the exact format, and the built-in generator."""

from __future__ import annotations

import hashlib
import json
import shlex
from pathlib import Path

import numpy as np
import pytest
from helpers.source_samples import PATHFINDER_HARD as DIFFICULTY
from helpers.source_samples import write_pathfinder_release as build_release
from helpers.source_samples import write_png
from PIL import Image

import data_prep
from data_prep.commands import main
from data_prep.pathfinder.generator import (
    CONTOUR_LENGTHS,
    MIN_RESOLUTION,
    generate_chunks,
    generate_image,
    generate_images,
    generate_range,
    image_rng,
    paddle_intensity,
    to_bytes,
)
from data_prep.pathfinder.layout import FREE, blocked
from data_prep.pathfinder.release_images import read_image
from data_prep.pathfinder.settings import PRESETS, settings_for
from data_prep.pathfinder.snakes import CROWDED


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
    """The two ends (2, 2) of a recorded path (num_paddles, 2, 2): its first paddle's start and its
    last paddle's end."""
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
        assert len(hits) >= 1, "each marker sits on a path end"
        found.append(hits[0])
    return found


def paddle_masks(record, resolution: int) -> list[list[np.ndarray]]:
    """Each paddle's occupancy mask on the image (R, R), cut to it as the original does, per snake."""
    board = record.board
    half, size = board.shapes.half, board.shapes.size
    out = []
    for snake in record.snakes:
        masks = []
        for start, key in zip(snake.starts, snake.keys, strict=True):
            row, col = board.point(start)
            canvas = np.zeros((resolution + 2 * size,) * 2)
            top, left = row - half + size, col - half + size
            canvas[top : top + size, left : left + size] = board.paddles[key].mask
            masks.append(canvas[size:-size, size:-size])
        out.append(masks)
    return out


def ring(resolution: int, width: int) -> np.ndarray:
    """(R, R) 1.0 within ``width`` pixels of the edge."""
    out = np.ones((resolution, resolution))
    out[width:-width, width:-width] = 0.0
    return out


def checked_against(record, resolution: int):
    """For every paddle placed by extending a snake: (its mask, the occupancy mask it was checked
    against), following the order of the original: the two main snakes grow in turn, a paddle
    joins the mask when its snake's next one is placed, the second main snake's last paddle when
    the pair is done (the first's never), a distractor's last when it is done."""
    masks = paddle_masks(record, resolution)
    padding = ring(resolution, settings_for(resolution).padding)
    main = masks[:2]
    for k in range(1, len(main[0])):
        for snake in (0, 1):
            other = main[1 - snake][: k - 1 if snake == 0 else k]
            yield main[snake][k], np.max([padding, *main[snake][: k - 1], *other], axis=0)
    placed = [padding, *main[0][:-1], *main[1]]
    for snake in masks[2:]:
        for k in range(1, len(snake)):
            yield snake[k], np.max([*placed, *snake[: k - 1]], axis=0)
        placed += snake


@pytest.mark.parametrize("difficulty", list(CONTOUR_LENGTHS))
def test_generated_labels_match_the_recorded_paths(difficulty):
    settings = settings_for(32)
    contour_length = CONTOUR_LENGTHS[difficulty]
    labels = [index % 2 for index in range(12)]
    images, records = generate_images([image_rng(3, index) for index in range(12)], difficulty, 32, labels)
    for image, label, record in zip(images, labels, records, strict=True):
        assert image.shape == (32, 32) and image.dtype == np.uint8 and image.max() == 255
        # Two main paths of the difficulty's contour length; distractors a third as long.
        assert [len(path) for path in record.paths[:2]] == [contour_length] * 2
        assert all(len(path) == contour_length // 3 for path in record.paths[2:])
        assert len(record.paths) - 2 <= settings.distractor_snakes(contour_length)
        for path in record.paths:
            lengths = np.linalg.norm(path[:, 1] - path[:, 0], axis=1)
            assert np.all((lengths > 0.7 * settings.paddle_length) & (lengths < 1.4 * settings.paddle_length))
            gaps = np.linalg.norm(path[1:, 0] - path[:-1, 1], axis=1)  # about twice the margin
            assert np.all(gaps < 2 * settings.paddle_margins[0] + 2)
            assert np.all((path > -1) & (path < 32))  # a line may leave the image by < 1 px, cut there
            # Every paddle is drawn: a pixel next to its middle is lit.
            corner = np.floor(path.mean(axis=1)).astype(int)
            around = [
                image[np.minimum(corner[:, 0] + dr, 31), np.minimum(corner[:, 1] + dc, 31)]
                for dr in (0, 1)
                for dc in (0, 1)
            ]
            assert np.all(np.max(around, axis=0) >= 100)
        # Both markers drawn, bright, on their path ends.
        assert np.all(image[record.markers[:, 0], record.markers[:, 1]] >= 192)
        (first_path, first_end), (second_path, second_end) = marked_ends(record)
        assert {first_path, second_path} <= {0, 1}  # markers only on main paths
        assert (first_end, second_end) == (0, 1)  # a first paddle's start and a last paddle's end
        if label == 1:
            assert first_path == second_path  # both ends of one path
        else:
            assert first_path != second_path  # one end of each of the two paths


def test_main_paths_start_a_seed_distance_apart_near_the_middle():
    settings = settings_for(32)
    for index in range(10):
        _, _, record = generate_image(image_rng(4, index), "hard", 32, label=index % 2)
        first, second = record.paths[0][0, 0], record.paths[1][0, 0]
        assert abs(np.linalg.norm(first - second) - settings.seed_distance) <= 0.71  # rounded to pixels
        band = 2 * settings.seed_distance - settings.paddle_length - settings.paddle_margins[0] - 1
        assert np.all((first >= band) & (first <= 31 - band))  # the first starts in the middle


@pytest.mark.parametrize("difficulty", ["easy", "hard"])
def test_paddles_keep_clear_of_the_paddles_placed_before_them(difficulty):
    # The original's rule: a paddle that extends a snake, plus the occupancy mask of the paddles
    # placed before it (but the one just before it on its own snake), stays below 1.8 everywhere.
    for index in range(8):
        _, _, record = generate_image(image_rng(5, index), difficulty, 32, label=index % 2)
        checks = list(checked_against(record, 32))
        assert len(checks) == sum(len(path) - 1 for path in record.paths)
        for mask, occupied in checks:
            assert (mask + occupied).max() < CROWDED


def test_distractors_start_where_their_seed_kernel_is_free():
    for index in range(8):
        _, _, record = generate_image(image_rng(6, index), "intermediate", 32, label=0)
        masks = paddle_masks(record, 32)
        board = record.board
        placed = [ring(32, 1), *masks[0][:-1], *masks[1]]  # the distractors' border is 1 pixel
        for snake, snake_masks in zip(record.snakes[2:], masks[2:], strict=True):
            occupied = np.max(placed, axis=0)
            start = np.array(board.point(snake.starts[0]))
            cells = start + board.paddles[snake.keys[0]].seed_kernel
            cells = cells[np.all((cells >= 0) & (cells < 32), axis=1)]
            assert np.all(occupied[cells[:, 0], cells[:, 1]] <= FREE)
            placed += snake_masks


def test_generated_sets_are_balanced_reproducible_and_per_image():
    tokens, labels = generate_range(0, 0, 12, "hard", 32)
    assert tokens.shape == (12, 1024) and labels.tolist() == [0, 1] * 6
    assert np.array_equal(generate_range(0, 0, 12, "hard", 32)[0], tokens)  # same seed, same images
    assert not np.array_equal(generate_range(1, 0, 12, "hard", 32)[0], tokens)  # another seed
    assert len({row.tobytes() for row in tokens}) == 12
    # Image i depends only on (seed, i): the same whatever range or worker count makes it.
    assert np.array_equal(generate_range(0, 5, 12, "hard", 32)[0], tokens[5:])
    image, _, _ = generate_image(image_rng(0, 7), "hard", 32, label=1)
    assert np.array_equal(image.reshape(-1), tokens[7])
    chunks = list(generate_chunks(12, 0, "hard", 32, workers=2, chunk_size=5))
    assert [start for start, _, _ in chunks] == [0, 5, 10]
    assert np.array_equal(np.concatenate([chunk for _, chunk, _ in chunks]), tokens)


# SHA-256 of the tokens (16, 1024) uint8 and labels (16,) int64 of images 0..15 of seed 0, hard, 32×32.
PINNED_SET_SHA256 = "32f0b00798c842d3cbebc8ef6bc58b764b44ec948d5efa986ae7c6144e169267"


def test_generated_bytes_are_pinned():
    # Any change to what the generator draws or how it rounds shows here; a deliberate change
    # updates the hash in its own commit, saying why.
    tokens, labels = generate_range(0, 0, 16, "hard", 32)
    digest = hashlib.sha256(tokens.tobytes() + labels.astype("<i8").tobytes()).hexdigest()
    assert digest == PINNED_SET_SHA256


def test_grey_levels_round_as_the_original():
    # A main-path pixel of line value 222 (contrast 0.75 × 2) in an image whose brightest pixel is
    # a distractor's (contrast 2): 222 / 255 × 1.5 × 255 / 2 = 166.5 before rounding. The original
    # rounded paddle pixels to float32 and byte-scaled in scipy's steps, which gives 166 (float64
    # throughout gives 167: the pairs of swapped grey levels of issue 22).
    pixels = paddle_intensity(np.array([222.0, 255.0]) / 255, np.array([1.5, 2.0]))
    assert pixels.dtype == np.float32
    image = np.zeros((1, 2, 2))
    image[0, 0] = pixels
    assert to_bytes(image).tolist() == [[[166, 255], [0, 0]]]
    # Byte-scaling by the image's own minimum and maximum, as scipy's bytescale: (x - min) * 255 / spread.
    assert to_bytes(np.array([[[0.5, 1.0], [0.75, 0.5]]])).tolist() == [[[0, 255], [128, 0]]]
    assert to_bytes(np.full((1, 2, 2), 0.3)).tolist() == [[[0, 0], [0, 0]]]  # a flat image: spread 1


def test_settings_are_lras_at_its_sizes_and_scaled_between():
    # lra_benchmarks/data/pathfinder.py (TFDS builders' docstrings) on top of snakes2's defaults.
    small, large = PRESETS[32], PRESETS[128]
    assert (small.padding, small.paddle_length, small.paddle_thickness, small.paddle_margins) == (
        1,
        2,
        0.5,
        (1,),
    )
    assert (small.marker_radius, small.antialias_scale, small.seed_distance, small.continuity) == (
        1.5,
        2,
        7,
        1.0,
    )
    assert (small.snake_contrast, small.paddle_contrast) == (2.0, 0.75)
    assert [small.distractor_snakes(length) for length in (6, 9, 14)] == [10, 6, 5]  # 20 // (length // 3)
    assert (large.padding, large.paddle_length, large.paddle_thickness, large.paddle_margins) == (
        1,
        5,
        1.5,
        (2, 3),
    )
    assert (large.marker_radius, large.seed_distance, large.continuity, large.snake_contrast) == (
        3.0,
        20,
        1.8,
        0.9,
    )
    assert [large.distractor_snakes(length) for length in (6, 9, 14)] == [17, 11, 8]  # 35 // (length // 3)
    scaled = settings_for(40)  # nearest preset 32, lengths × 1.25
    assert (scaled.paddle_length, scaled.seed_distance, scaled.marker_radius) == (2, 9, 1.875)


@pytest.mark.parametrize(("difficulty", "resolution"), [("intermediate", 64), ("hard", 24)])
def test_generator_works_at_other_resolutions(difficulty, resolution):
    image, label, record = generate_image(image_rng(0, 1), difficulty, resolution, label=1)
    assert image.shape == (resolution, resolution) and label == 1
    assert all(np.all((path > -1) & (path < resolution)) for path in record.paths)
    (first_path, _), (second_path, _) = marked_ends(record)
    assert first_path == second_path
    assert np.all(image[record.markers[:, 0], record.markers[:, 1]] >= 128)


def test_generator_makes_path_x_images_with_the_128_settings():
    image, _, record = generate_image(image_rng(0, 0), "easy", 128, label=0)
    assert image.shape == (128, 128) and image.max() == 255
    assert record.margin in (2, 3)  # drawn per image, as the original's paddle_margin_list [2, 3]
    assert [len(path) for path in record.paths[:2]] == [6, 6]
    assert all(len(path) == 2 for path in record.paths[2:])
    lengths = np.linalg.norm(record.paths[0][:, 1] - record.paths[0][:, 0], axis=1)
    assert np.all((lengths > 3.5) & (lengths < 7.0))  # paddle length 5
    (first_path, _), (second_path, _) = marked_ends(record)
    assert first_path != second_path
    assert np.all(image[record.markers[:, 0], record.markers[:, 1]] >= 128)


def test_generator_rejects_unknown_options():
    with pytest.raises(ValueError, match="difficulty must be one of"):
        generate_image(image_rng(0, 0), "medium", 32)
    with pytest.raises(ValueError, match=f"at least {MIN_RESOLUTION}"):
        generate_image(image_rng(0, 0), "easy", MIN_RESOLUTION - 1)
    with pytest.raises(ValueError, match="whole number"):
        generate_image(image_rng(0, 0), "easy", 32.0)
    with pytest.raises(ValueError, match="labels must be 0 or 1"):
        generate_image(image_rng(0, 0), "easy", 32, label=2)


def test_generated_set_is_prepared_split_and_loadable(tmp_path):
    root = tmp_path / "data"
    argv = ["pathfinder", "--generate", "--num", "40", "--seed", "5", "--workers", "1", "--root", str(root)]
    assert main(argv) == 0
    splits = load_all("pathfinder-generated", root)  # not "pathfinder": that name is the release's
    train = data_prep.load("pathfinder-generated", "train", root=root)
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
    assert np.array_equal(data_prep.load("pathfinder-generated", "train", root=root).tokens, train.tokens)


def test_generated_set_names_follow_difficulty_and_resolution(tmp_path):
    argv = ["pathfinder", "--generate", "--num", "10", "--difficulty", "easy", "--resolution", "24"]
    assert main([*argv, "--workers", "1", "--root", str(tmp_path)]) == 0
    data = data_prep.load("pathfinder-easy-24px-generated", "val", root=tmp_path)
    assert data.tokens.shape == (1, 576) and data.meta["seq_len"] == 576


def test_bad_generator_options_fail_in_one_line_and_leave_no_set(tmp_path, capsys):
    base = ["pathfinder", "--generate", "--workers", "1", "--root", str(tmp_path)]
    assert main([*base, "--num", "-5"]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "--num must be at least 10" in lines[0] and "got -5" in lines[0]
    assert main([*base, "--num", "20", "--resolution", "8"]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and f"at least {MIN_RESOLUTION} (LRA's are 32, 64, 128, 256), got 8" in lines[0]
    with pytest.raises(SystemExit):
        main([*base, "--num", "20", "--difficulty", "medium"])
    assert "choose from 'easy', 'intermediate', 'hard'" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # nothing half-written, not even the data root


def test_a_seed_kernel_that_can_leave_the_image_blocks_the_seed_as_in_the_original():
    """The original dilates its float mask with cv2.dilate (border -DBL_MAX) and finds no free start
    when any value is negative: blocked exactly when, from some pixel, every kernel offset leaves
    the image. Checked against that dilation done directly, with -inf padding."""
    size = 8
    rng = np.random.default_rng(0)
    for _ in range(200):
        kernel = rng.integers(-2, 3, size=(int(rng.integers(1, 4)), 2))
        padded = np.full((size + 8, size + 8), -np.inf)
        padded[4:-4, 4:-4] = 0.0
        dilated = np.max([padded[4 + r : 4 + r + size, 4 + c : 4 + c + size] for r, c in kernel], axis=0)
        assert blocked(kernel, size) == bool((dilated < 0).any())
    assert blocked(np.array([[1, 0], [0, 1]]), size)  # from the bottom-right corner
    assert not blocked(np.array([[0, 0]]), size)
