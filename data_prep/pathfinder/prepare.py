"""Pathfinder: the LRA release's PNGs, or the built-in generator, into the prepared format.

    python -m data_prep pathfinder --source PATH/TO/lra_release            # hard (curv_contour_length_14)
    python -m data_prep pathfinder --source PATH --difficulty easy         # -> set "pathfinder-easy"
    python -m data_prep pathfinder --source PATH --resolution 128 --name pathx   # Path-X, 128×128
    python -m data_prep pathfinder --generate                # 200k generated, hard -> "pathfinder-generated"
    python -m data_prep pathfinder --generate --num 4000 --difficulty easy --name pathfinder-demo

``--source`` may be the unpacked release at any level (``lra_release/``, ``lra_release/lra_release/``,
``pathfinder<R>/`` for ``--resolution R``) or a difficulty folder itself (``release_images``); empty
metadata files and rows whose image is missing are skipped and counted in meta.json.

Each image becomes its pixels, row-major, as tokens (vocab 256, a black pixel is token 0, no
padding), label 1 = the markers are connected. Both modes shuffle the images with a seeded
permutation (seed in meta.json) and split them 80/10/10 into train/val/test.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from tqdm import tqdm

from data_prep.commands import command, rebuild_command
from data_prep.pathfinder.generator import CONTOUR_LENGTHS, check_options, generate_chunks
from data_prep.pathfinder.release_images import (
    DEFAULT_DIFFICULTY,
    DIFFICULTY_FOLDERS,
    SIDE,
    find_difficulty_folder,
    list_images,
    read_image,
)
from data_prep.storage import PreparedWriter, SplitArrays

Writer = Callable[[PreparedWriter], None]

RELEASE_SIDES = (32, 64, 128, 256)  # the release's pathfinder<R> folders
VOCAB_SIZE = 256
NUM_CLASSES = 2
DEFAULT_NUM = 200_000
MIN_IMAGES = 10  # so that no split of 80/10/10 is empty


def create_splits(
    writer: PreparedWriter, num: int, seed: int, pixels: int
) -> tuple[list[SplitArrays], np.ndarray]:
    """The train/val/test arrays of a seeded 80/10/10 split of ``num`` examples (lengths filled:
    no padding) and where example ``i`` goes: ``placement[i] = (split number, row)`` (num, 2).
    Needs at least 10 examples so that no split is empty."""
    if num < MIN_IMAGES:
        raise ValueError(f"an 80/10/10 split needs at least {MIN_IMAGES} images, got {num}")
    order = np.random.default_rng(seed).permutation(num)
    held_out = num // 10
    sizes = {"train": num - 2 * held_out, "val": held_out, "test": held_out}
    placement = np.empty((num, 2), dtype=np.int64)
    arrays, start = [], 0
    for number, (split, size) in enumerate(sizes.items()):
        placement[order[start : start + size]] = np.stack([np.full(size, number), np.arange(size)], axis=1)
        arrays.append(writer.create_split(split, size, (pixels,), VOCAB_SIZE))
        arrays[-1].lengths[:] = pixels
        start += size
    return arrays, placement


def default_name(difficulty: str, resolution: int = SIDE, generated: bool = False) -> str:
    """``pathfinder`` for the release's hard 32×32, else with ``-<difficulty>``, ``-<R>px`` and, for
    the generator's images (never comparable with LRA's numbers), ``-generated``."""
    parts = ["pathfinder"] + ([difficulty] if difficulty != DEFAULT_DIFFICULTY else [])
    parts += [f"{resolution}px"] if resolution != SIDE else []
    return "-".join(parts + (["generated"] if generated else []))


# ---------------------------------------------------------------- the LRA release


def prepare_release(args: argparse.Namespace) -> tuple[dict, Writer]:
    """meta.json entries and the writer of a set read from the LRA release."""
    side = SIDE if args.resolution is None else args.resolution
    if side not in RELEASE_SIDES:
        raise ValueError(f"--resolution of the LRA release must be one of {RELEASE_SIDES}, got {side}")
    args.source = args.source.resolve()
    folder, args.difficulty = find_difficulty_folder(args.source, args.difficulty, side)
    images, counts = list_images(folder)
    args.name = args.name or default_name(args.difficulty, side)

    def write(writer: PreparedWriter) -> None:
        arrays, placement = create_splits(writer, len(images), args.seed, side * side)
        with tqdm(images, desc="pathfinder read", unit="img") as listed:
            for (path, label), (number, row) in zip(listed, placement, strict=True):
                arrays[number].tokens[row] = read_image(path, side)
                arrays[number].labels[row] = label

    meta = {
        "source": str(folder),
        "seq_len": side * side,
        "resolution": side,
        "metadata_files": counts.pop("metadata_files"),
        "skipped": counts,
        "command": rebuild_command(
            "pathfinder", args, ["name", "source", "difficulty", "resolution", "seed"]
        ),
    }
    return meta, write


# ---------------------------------------------------------------- the generator


def prepare_generated(args: argparse.Namespace) -> tuple[dict, Writer]:
    """meta.json entries and the writer of a generated set (image ``i`` has label ``i % 2``)."""
    args.difficulty = args.difficulty or DEFAULT_DIFFICULTY
    args.num = DEFAULT_NUM if args.num is None else args.num
    args.resolution = SIDE if args.resolution is None else args.resolution
    args.workers = (os.cpu_count() or 1) if args.workers is None else args.workers
    check_options(args.difficulty, args.resolution)
    if args.num < MIN_IMAGES:
        raise ValueError(f"--num must be at least {MIN_IMAGES} (an 80/10/10 split), got {args.num}")
    if args.workers < 1:
        raise ValueError(f"--workers must be at least 1, got {args.workers}")
    args.name = args.name or default_name(args.difficulty, args.resolution, generated=True)

    def write(writer: PreparedWriter) -> None:
        arrays, placement = create_splits(writer, args.num, args.seed, args.resolution**2)
        chunks = generate_chunks(args.num, args.seed, args.difficulty, args.resolution, args.workers)
        with tqdm(total=args.num, desc=f"pathfinder generate {args.difficulty}", unit="img") as progress:
            for start, tokens, labels in chunks:
                where = placement[start : start + len(labels)]
                for number, split_arrays in enumerate(arrays):
                    mine = where[:, 0] == number
                    split_arrays.tokens[where[mine, 1]] = tokens[mine]
                    split_arrays.labels[where[mine, 1]] = labels[mine]
                progress.update(len(labels))

    meta = {
        "source": "generator",
        "generator": "data_prep.pathfinder.generator (built-in; its docstring says how it differs)",
        "seq_len": args.resolution**2,
        "resolution": args.resolution,
        "command": rebuild_command(
            "pathfinder", args, ["name", "generate", "num", "difficulty", "seed", "resolution"]
        ),
    }
    return meta, write


def run_pathfinder(args: argparse.Namespace) -> None:
    started = time.time()
    if not args.generate and any(getattr(args, key) is not None for key in ("num", "workers")):
        raise ValueError("--num and --workers apply to --generate only")
    if args.seed < 0:
        raise ValueError(f"--seed must be >= 0, got {args.seed}")
    meta, write = (prepare_generated if args.generate else prepare_release)(args)
    meta |= {
        "task": "pathfinder",
        "vocab_size": VOCAB_SIZE,
        "num_classes": NUM_CLASSES,
        "difficulty": args.difficulty,
        "contour_length": CONTOUR_LENGTHS[args.difficulty],
        "seed": args.seed,
        "split": "seeded permutation, 80/10/10 train/val/test",
    }
    with PreparedWriter(args.root, args.name, meta) as writer:
        write(writer)
    writer.report(f"{args.difficulty}, {meta['seq_len']} pixels each", started)


@command(
    "pathfinder",
    help="Pathfinder and Path-X: the LRA release's pathfinder<R> PNGs (--source PATH) or the built-in "
    "generator (--generate)",
)
def configure(parser: argparse.ArgumentParser):
    origin = parser.add_mutually_exclusive_group(required=True)
    origin.add_argument(
        "--source",
        type=Path,
        help="the unpacked LRA release (lra_release/ at any level), pathfinder<R>/, or a difficulty folder",
    )
    origin.add_argument(
        "--generate", action="store_true", help="draw the images with the built-in generator instead"
    )
    parser.add_argument(
        "--difficulty",
        choices=list(DIFFICULTY_FOLDERS),
        default=None,
        help="contour length 6 / 9 / 14: curv_baseline / curv_contour_length_9 / _14 "
        "(default: hard, or the one a given difficulty folder holds)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the split (and of the generator)")
    parser.add_argument(
        "--name",
        default=None,
        help="folder name of the set (default: pathfinder[-<difficulty>][-<R>px], and -generated "
        "for --generate: pathfinder-generated for hard 32x32)",
    )
    parser.add_argument("--num", type=int, default=None, help=f"images to generate (default: {DEFAULT_NUM})")
    parser.add_argument(
        "--resolution",
        type=int,
        default=None,
        help=f"image side in pixels (default: {SIDE}; 128 = Path-X; the release has {RELEASE_SIDES})",
    )
    parser.add_argument(
        "--workers", type=int, default=None, help="generator processes (default: all CPU cores)"
    )
    return run_pathfinder
