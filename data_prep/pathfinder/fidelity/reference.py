"""Reference Pathfinder images to measure the generator against (``pathfinder-stats --reference``).

A reference is one of:

- a folder in the LRA release layout, at any level ``release`` accepts (``lra_release/``,
  ``pathfinder<R>/`` or one difficulty folder): metadata + PNGs, for each difficulty it holds;
- a prepared Pathfinder set (its folder, holding meta.json): the difficulty its meta.json records;
- an ``.npz`` with ``images`` (N, R, R) or (N, R*R) uint8 and ``labels`` (N,), and optionally
  ``difficulty`` (a string); without one its images count as hard, LRA's Pathfinder task.

Only the first ``limit`` images of each difficulty are read.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from data_prep.pathfinder.release_images import (
    DEFAULT_DIFFICULTY,
    find_difficulty_folder,
    list_images,
    read_image,
)
from data_prep.reader import PreparedSet
from data_prep.storage import META_FILE, SPLITS

Images = tuple[np.ndarray, np.ndarray]  # images (N, R, R) uint8, labels (N,) int64


def load_reference(path: Path, difficulties: list[str], resolution: int, limit: int) -> dict[str, Images]:
    """The reference images at ``path`` (module docstring) for each of ``difficulties`` it has,
    at most ``limit`` of each; ``ValueError`` in one line when it has none, or not at
    ``resolution`` pixels square."""
    if not path.exists():
        raise ValueError(f"--reference {path} does not exist")
    if path.is_file():
        found = _from_npz(path)
    elif (path / META_FILE).is_file():
        found = _from_prepared(path)
    else:
        found = _from_release(path, difficulties, resolution, limit)
    found = {level: (images[:limit], labels[:limit]) for level, (images, labels) in found.items()}
    chosen = {level: found[level] for level in difficulties if level in found}
    if not chosen:
        raise ValueError(
            f"--reference {path} holds no images of {', '.join(difficulties)} "
            f"(has {', '.join(sorted(found)) or 'none'})"
        )
    for images, _ in chosen.values():
        if images.shape[1:] != (resolution, resolution):
            raise ValueError(
                f"--reference {path} holds {images.shape[1]}×{images.shape[2]} images, "
                f"not --resolution {resolution}"
            )
    return chosen


def _square(images: np.ndarray, where: Path) -> np.ndarray:
    """``images`` (N, R, R) or (N, R*R) uint8 as (N, R, R)."""
    if images.dtype != np.uint8 or images.ndim not in (2, 3):
        raise ValueError(
            f"{where}: images must be uint8 (N, R, R) or (N, R*R), got {images.dtype} {images.shape}"
        )
    side = round(images[0].size ** 0.5) if len(images) else 0
    if images.ndim == 2 and side * side != images.shape[1]:
        raise ValueError(f"{where}: {images.shape[1]} pixels per image is not a square image")
    return images.reshape(len(images), side, side)


def _from_npz(path: Path) -> dict[str, Images]:
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
    except (OSError, ValueError, EOFError) as error:
        raise ValueError(f"{path}: not a readable .npz of arrays ({error})") from None
    missing = {"images", "labels"} - set(arrays)
    if missing:
        raise ValueError(f"{path}: an .npz reference needs images and labels, lacks {sorted(missing)}")
    difficulty = str(arrays["difficulty"]) if "difficulty" in arrays else DEFAULT_DIFFICULTY
    return {difficulty: (_square(arrays["images"], path), arrays["labels"].astype(np.int64))}


def _from_prepared(folder: Path) -> dict[str, Images]:
    prepared = PreparedSet(folder.name, folder.parent)
    if prepared.meta.get("task") != "pathfinder":
        raise ValueError(f"{folder} is a prepared {prepared.meta.get('task')!r} set, not a Pathfinder set")
    splits = [prepared.split(split) for split in SPLITS if split in prepared.counts]
    images = _square(np.concatenate([np.asarray(split.tokens) for split in splits]), folder)
    labels = np.concatenate([np.asarray(split.labels) for split in splits])
    return {prepared.meta["difficulty"]: (images, labels)}


def _from_release(source: Path, difficulties: list[str], resolution: int, limit: int) -> dict[str, Images]:
    if (source / "metadata").is_dir():  # one difficulty folder: the one its name says, else hard
        folders = [find_difficulty_folder(source, None, resolution)]
    else:
        folders = []
        for difficulty in difficulties:
            try:
                folders.append(find_difficulty_folder(source, difficulty, resolution))
            except FileNotFoundError:
                continue  # the release here lacks this difficulty
    found = {}
    for folder, difficulty in folders:
        listed = list_images(folder)[0][:limit]
        images = np.array([read_image(image, resolution) for image, _ in listed], dtype=np.uint8)
        labels = np.array([label for _, label in listed], dtype=np.int64)
        found[difficulty] = (images.reshape(-1, resolution, resolution), labels)
    return found
