"""How close the built-in Pathfinder generator's images are to the original's: a benchmark.

    python -m data_prep pathfinder-stats                      # 1000 images per difficulty, 32 px
    python -m data_prep pathfinder-stats --out results/pathfinder_stats.md --workers 2

Per difficulty it draws images ``0..num-1`` of ``--seed`` (labels alternate) and prints, beside the
original generator's figures (``ORIGINAL``: snakes2 at LRA's 32×32 settings, 1000 images per
difficulty, as measured in the project's issue), whether each target is met:

- mean pixel value, share of pixels > 0, share of pixels > 128 (targets: within 15%);
- mean number of 8-connected components of pixels > 0 per image (target: within ±1.5);
- how well the distance between the two markers alone predicts the label: the accuracy of a
  logistic regression on (distance, distance²), standardised on the training folds, L2 penalty
  C = 1 (scikit-learn's default), over 5 folds of consecutive images (each balanced, as a
  stratified split without shuffling makes them) (target: at most 3 points above the original).

``--out`` also writes the table as markdown with the command, machine, date and load.
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import time
from dataclasses import astuple, dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

from data_prep.commands import command
from data_prep.pathfinder.generator import (
    CONTOUR_LENGTHS,
    check_options,
    run_jobs,
    set_images,
)

CHUNK = 250
FOLDS = 5
PENALTY = 1.0  # inverse L2 strength, as scikit-learn's C


@dataclass(frozen=True)
class Figures:
    mean_pixel: float
    share_lit: float  # pixels > 0
    share_bright: float  # pixels > 128
    components: float  # 8-connected components of pixels > 0, per image
    distance_accuracy: float


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


def _fit_logistic(features: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Weights (F + 1,) (last: intercept) of an L2-penalised (``PENALTY``) logistic regression of
    ``labels`` (n,) on ``features`` (n, F), by Newton's method; the intercept is not penalised."""
    design = np.column_stack([features, np.ones(len(labels))])
    penalty = np.eye(design.shape[1]) / PENALTY
    penalty[-1, -1] = 0.0
    weights = np.zeros(design.shape[1])
    for _ in range(100):
        chance = 1.0 / (1.0 + np.exp(-design @ weights))
        gradient = design.T @ (chance - labels) + penalty @ weights
        hessian = (design.T * (chance * (1.0 - chance))) @ design + penalty
        step = np.linalg.solve(hessian, gradient)
        weights -= step
        if np.abs(step).max() < 1e-10:
            break
    return weights


def distance_accuracy(distances: np.ndarray, labels: np.ndarray) -> float:
    """Cross-validated accuracy of predicting ``labels`` (n,) from ``distances`` (n,) and their
    squares (see the module docstring)."""
    features = np.column_stack([distances, distances**2])
    correct = 0
    for test in np.array_split(np.arange(len(labels)), FOLDS):
        train = np.setdiff1d(np.arange(len(labels)), test)
        mean, spread = features[train].mean(axis=0), features[train].std(axis=0)
        spread[spread == 0] = 1.0
        weights = _fit_logistic((features[train] - mean) / spread, labels[train])
        scores = ((features[test] - mean) / spread) @ weights[:-1] + weights[-1]
        correct += int(((scores > 0) == labels[test]).sum())
    return correct / len(labels)


def measure(images: np.ndarray, labels: np.ndarray, distances: np.ndarray) -> Figures:
    """The figures of ``images`` (N, R, R) uint8 with ``labels`` (N,) and marker ``distances`` (N,)."""
    return Figures(
        mean_pixel=float(images.mean()),
        share_lit=float((images > 0).mean()),
        share_bright=float((images > 128).mean()),
        components=float(count_components(images > 0).mean()),
        distance_accuracy=distance_accuracy(distances, labels),
    )


def targets_met(ours: Figures, original: Figures) -> list[bool]:
    """Whether each figure of ``ours`` meets its target against ``original`` (module docstring)."""
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
    values = astuple(figures)
    return [
        f"{values[0]:.1f}",
        f"{values[1]:.3f}",
        f"{values[2]:.3f}",
        f"{values[3]:.1f}",
        f"{values[4]:.3f}",
    ]


def table(difficulty: str, ours: Figures, original: Figures | None) -> list[str]:
    """Markdown rows comparing ``ours`` with ``original`` (None: no original at this size)."""
    if original is None:
        rows = ["| figure | ours |", "|---|---|"]
        return rows + [f"| {name} | {cell} |" for name, cell in zip(NAMES, _cells(ours), strict=True)]
    met = targets_met(ours, original)
    rows = ["| figure | original | ours | target met |", "|---|---|---|---|"]
    cells = zip(NAMES, _cells(original), _cells(ours), met, strict=True)
    return rows + [
        f"| {name} | {theirs} | {mine} | {'yes' if ok else 'NO'} |" for name, theirs, mine, ok in cells
    ]


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
    options += ["--difficulty", *args.difficulty] + (["--out", args.out] if args.out is not None else [])
    return shlex.join(["python", "-m", "data_prep", "pathfinder-stats", *map(str, options)])


def run_stats(args: argparse.Namespace) -> None:
    if args.num < 2 * FOLDS:
        raise ValueError(f"--num must be at least {2 * FOLDS} (5 balanced folds), got {args.num}")
    if args.workers < 1:
        raise ValueError(f"--workers must be at least 1, got {args.workers}")
    for difficulty in args.difficulty:
        check_options(difficulty, args.resolution)
    original = ORIGINAL if args.resolution == ORIGINAL_RESOLUTION else {}
    lines = [f"machine: {machine()}", ""]
    for difficulty in args.difficulty:
        (images, labels, distances), seconds = draw(
            args.num, args.seed, difficulty, args.resolution, args.workers
        )
        ours = measure(images, labels, distances)
        size = f"{args.resolution}×{args.resolution}"
        lines += [
            f"### {difficulty} (contour length {CONTOUR_LENGTHS[difficulty]}), {size}",
            "",
            *table(difficulty, ours, original.get(difficulty)),
            "",
            f"{args.num} images drawn in {seconds:.1f} s: {args.num / seconds:.0f} images/s "
            f"with {args.workers} worker(s)",
            "",
        ]
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
    parser.add_argument("--out", type=Path, default=None, help="also write the tables as markdown here")
    return run_stats
