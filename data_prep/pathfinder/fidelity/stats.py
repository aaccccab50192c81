"""How close the built-in Pathfinder generator's images are to the original's: a benchmark.

    python -m data_prep pathfinder-stats                      # 1000 images per difficulty, 32 px
    python -m data_prep pathfinder-stats --out results/pathfinder_stats.md --workers 2
    python -m data_prep pathfinder-stats --num 4000 --reference PATH   # and against reference images

Per difficulty it draws images ``0..num-1`` of ``--seed`` (labels alternate) and prints their
``Figures`` beside the original generator's (``ORIGINAL``) and whether each target is met
(``targets_met``); with ``--reference`` also those of the reference images and a two-sample test
against them (``two_sample``). ``--out`` writes the table as markdown with command, machine, date, load.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import shlex
import time
from dataclasses import astuple, dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

from data_prep.commands import command
from data_prep.pathfinder.fidelity.logistic import predict
from data_prep.pathfinder.fidelity.reference import load_reference
from data_prep.pathfinder.fidelity.two_sample import report
from data_prep.pathfinder.generator import (
    CONTOUR_LENGTHS,
    check_options,
    run_jobs,
    set_images,
)

CHUNK = 250
FOLDS = 5


@dataclass(frozen=True)
class Figures:
    mean_pixel: float
    share_lit: float  # pixels > 0
    share_bright: float  # pixels > 128
    components: float  # 8-connected components of pixels > 0, per image
    distance_accuracy: float


# The original generator's figures: snakes2 at LRA's 32×32 settings, 1000 images per difficulty.
ORIGINAL = {
    "easy": Figures(12.9, 0.227, 0.051, 7.8, 0.594),
    "intermediate": Figures(15.4, 0.266, 0.063, 7.8, 0.563),
    "hard": Figures(20.2, 0.341, 0.085, 8.3, 0.541),
}
ORIGINAL_RESOLUTION = 32
NAMES = ("mean pixel", "share > 0", "share > 128", "components", "distance-only accuracy")


def count_components(binary: np.ndarray) -> np.ndarray:
    """The number of 8-connected components of True pixels in each of ``binary`` (N, H, W): (N,).

    Each pixel takes the smallest flat index in its neighbourhood, then follows the chain of those
    indices (pointer jumping), until nothing changes; a component is a pixel labelled by itself."""
    padded = np.pad(binary, ((0, 0), (1, 1), (1, 1)))
    empty = padded.size  # the label of background pixels, larger than any index
    index = np.arange(padded.size).reshape(padded.shape)
    labels = np.append(np.where(padded, index, empty).ravel(), empty)
    grid = labels[:-1].reshape(padded.shape)
    height, width = binary.shape[1:]
    inner = grid[:, 1:-1, 1:-1]
    while True:
        before = inner.copy()
        smallest = inner.copy()
        for row in range(3):
            for col in range(3):
                np.minimum(smallest, grid[:, row : row + height, col : col + width], out=smallest)
        inner[...] = np.where(binary, smallest, empty)
        labels[:-1] = labels[labels[:-1]]  # jump: take the label of one's label
        if np.array_equal(before, inner):
            break
    return (inner == index[:, 1:-1, 1:-1]).sum(axis=(1, 2))


def distance_accuracy(distances: np.ndarray, labels: np.ndarray) -> float:
    """How well the distance between the two markers alone predicts the label: the accuracy of a
    logistic regression of ``labels`` (n,) on ``distances`` (n,) and their squares, standardised on the
    training folds, L2 penalty C = 1 (scikit-learn's default), over 5 folds of consecutive images (each
    balanced, as a stratified split without shuffling makes them)."""
    features = np.column_stack([distances, distances**2])
    correct = 0
    for test in np.array_split(np.arange(len(labels)), FOLDS):
        train = np.setdiff1d(np.arange(len(labels)), test)
        correct += int((predict(features[train], labels[train], features[test]) == labels[test]).sum())
    return correct / len(labels)


def measure(images: np.ndarray, labels: np.ndarray, distances: np.ndarray | None) -> Figures:
    """The figures of ``images`` (N, R, R) uint8 with ``labels`` (N,) and marker ``distances`` (N,):
    mean pixel value, shares of pixels > 0 and > 128, 8-connected components of pixels > 0 per image,
    distance-only accuracy. ``distances`` None (reference images: where their markers are is not
    known) gives a NaN distance-only accuracy."""
    return Figures(
        mean_pixel=float(images.mean()),
        share_lit=float((images > 0).mean()),
        share_bright=float((images > 128).mean()),
        components=float(count_components(images > 0).mean()),
        distance_accuracy=math.nan if distances is None else distance_accuracy(distances, labels),
    )


def targets_met(ours: Figures, original: Figures) -> list[bool]:
    """Whether each figure of ``ours`` meets its target against ``original``: mean pixel value and the
    shares of pixels > 0 and > 128 within 15%, components per image within ±1.5, the distance-only
    accuracy at most 3 points above the original's."""
    relative = [abs(a - b) <= 0.15 * b for a, b in zip(astuple(ours)[:3], astuple(original)[:3], strict=True)]
    return [
        *relative,
        abs(ours.components - original.components) <= 1.5,
        ours.distance_accuracy <= original.distance_accuracy + 0.03,
    ]


def _draw_chunk(job: tuple[int, int, int, str, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Images ``start..stop-1`` of ``seed``: (images (n, R, R), labels (n,), marker distances (n,))."""
    images, labels, records = set_images(*job)
    distances = np.array([np.linalg.norm(np.subtract(*record.markers)) for record in records])
    return images, labels, distances


def draw(num: int, seed: int, difficulty: str, resolution: int, workers: int) -> tuple[tuple, float]:
    """((images, labels, distances) of images 0..num-1, wall seconds spent drawing them)."""
    jobs = [(seed, start, min(start + CHUNK, num), difficulty, resolution) for start in range(0, num, CHUNK)]
    started = time.perf_counter()
    parts = []
    with tqdm(total=num, desc=f"pathfinder-stats {difficulty}", unit="img") as progress:
        for part in run_jobs(_draw_chunk, jobs, workers):
            parts.append(part)
            progress.update(len(part[1]))
    drawn = tuple(np.concatenate(arrays) for arrays in zip(*parts, strict=True))
    return drawn, time.perf_counter() - started


def _cells(figures: Figures) -> list[str]:
    """Each figure formatted; a NaN (not measured) as a dash."""
    formats = (".1f", ".3f", ".3f", ".1f", ".3f")
    values = zip(astuple(figures), formats, strict=True)
    return ["–" if math.isnan(value) else format(value, spec) for value, spec in values]


def table(ours: Figures, original: Figures | None, reference: Figures | None = None) -> list[str]:
    """Markdown rows of the figures of ``original`` (None: none at this size), of the
    ``reference`` images (None: none given) and of ``ours``, and whether ours meets each target
    against the original."""
    columns = [
        (name, _cells(figures))
        for name, figures in (("original", original), ("reference", reference), ("ours", ours))
        if figures is not None
    ]
    met = [["yes" if ok else "NO" for ok in targets_met(ours, original)]] if original is not None else []
    heads = [name for name, _ in columns] + (["target met"] if met else [])
    rows = ["| figure | " + " | ".join(heads) + " |", "|---" * (len(heads) + 1) + "|"]
    values = zip(NAMES, *[cells for _, cells in columns], *met, strict=True)
    return rows + ["| " + " | ".join(row) + " |" for row in values]


def machine() -> str:
    """CPU model and cores, date and load, in one line."""
    model = platform.processor() or "unknown CPU"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        names = [
            line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines() if "model name" in line
        ]
        model = names[0] if names else model
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    return f"{model}, {os.cpu_count()} cores; {time.strftime('%Y-%m-%d %H:%M %Z')}; load average {load}"


def command_line(args: argparse.Namespace) -> str:
    """The command that repeats this measurement."""
    options = [
        "--num",
        args.num,
        "--resolution",
        args.resolution,
        "--seed",
        args.seed,
        "--workers",
        args.workers,
    ]
    options += ["--difficulty", *args.difficulty]
    options += ["--reference", args.reference] if args.reference is not None else []
    options += ["--out", args.out] if args.out is not None else []
    return shlex.join(["python", "-m", "data_prep", "pathfinder-stats", *map(str, options)])


def run_stats(args: argparse.Namespace) -> None:
    if args.num < 2 * FOLDS:
        raise ValueError(f"--num must be at least {2 * FOLDS} (5 balanced folds), got {args.num}")
    if args.workers < 1:
        raise ValueError(f"--workers must be at least 1, got {args.workers}")
    for difficulty in args.difficulty:
        check_options(difficulty, args.resolution)
    original = ORIGINAL if args.resolution == ORIGINAL_RESOLUTION else {}
    references = {}
    if args.reference is not None:
        references = load_reference(args.reference, args.difficulty, args.resolution, args.num)
    lines = [f"machine: {machine()}", ""]
    for difficulty in args.difficulty:
        (images, labels, distances), seconds = draw(
            args.num, args.seed, difficulty, args.resolution, args.workers
        )
        reference = references.get(difficulty)
        size = f"{args.resolution}×{args.resolution}"
        lines += [
            f"### {difficulty} (contour length {CONTOUR_LENGTHS[difficulty]}), {size}",
            "",
            *table(
                measure(images, labels, distances),
                original.get(difficulty),
                None if reference is None else measure(reference[0], reference[1], None),
            ),
            "",
            f"{args.num} images drawn in {seconds:.1f} s: {args.num / seconds:.0f} images/s "
            f"with {args.workers} worker(s)",
            "",
        ]
        if reference is not None:
            lines += [f"reference: the first {len(reference[0])} images of {args.reference}", ""]
            lines += [*report(images, reference[0]), ""]
    print("\n".join(lines))
    if args.out is not None:
        header = [
            "# Pathfinder generator: closeness to the original",
            "",
            f"command: `{command_line(args)}`",
            "",
        ]
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text("\n".join(header + lines), encoding="utf-8")


@command(
    "pathfinder-stats",
    help="Pathfinder: measure the built-in generator's images against the original's (a benchmark)",
)
def configure(parser: argparse.ArgumentParser):
    parser.add_argument("--num", type=int, default=1000, help="images per difficulty (default: 1000)")
    parser.add_argument("--resolution", type=int, default=ORIGINAL_RESOLUTION, help="image side in pixels")
    parser.add_argument("--seed", type=int, default=0, help="generator seed (default: 0)")
    parser.add_argument("--workers", type=int, default=1, help="generator processes (default: 1)")
    parser.add_argument(
        "--difficulty",
        nargs="+",
        choices=list(CONTOUR_LENGTHS),
        default=list(CONTOUR_LENGTHS),
        help="difficulties to measure (default: all)",
    )
    parser.add_argument(
        "--reference",
        type=Path,
        default=None,
        help="also compare with these images: the LRA release (any level), a prepared Pathfinder set's "
        "folder, or an .npz with images and labels (and optionally difficulty; default hard)",
    )
    parser.add_argument("--out", type=Path, default=None, help="also write the tables as markdown here")
    return run_stats
