"""The LRA release's Pathfinder folders: find a difficulty folder, list its images from the
metadata, read its PNGs (``prepare`` writes them into a prepared set).

``pathfinder<R>/<difficulty folder>/metadata/<batch>.npy`` lists the images, one per row
``dir file _ label ...`` (image = ``dir/file`` under the difficulty folder): a text file, or at
some versions of the original generator a binary ``numpy.save`` array of the same rows. R is 32
for LRA's Pathfinder and 128 for Path-X.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

from data_prep.sources import locate_folder

DIFFICULTY_FOLDERS = {
    "easy": "curv_baseline",
    "intermediate": "curv_contour_length_9",
    "hard": "curv_contour_length_14",
}
DEFAULT_DIFFICULTY = "hard"
SIDE = 32
NPY_MAGIC = b"\x93NUMPY"
LABEL_FIELD = 3
HINT = (
    "Give the unpacked LRA release (lra_release/ or lra_release/lra_release/; fetch it with "
    "python -m data_prep lra-release --download), its pathfinder<R>/ folder or a difficulty folder "
    f"({', '.join(DIFFICULTY_FOLDERS.values())}); or generate images with --generate."
)


def find_difficulty_folder(source: Path, difficulty: str | None, side: int = SIDE) -> tuple[Path, str]:
    """The difficulty folder (holding ``metadata/``) under ``source``, and its difficulty: the one
    asked for, else the one its name says when ``source`` is a difficulty folder, else hard."""
    if (source / "metadata").is_dir():
        named = {folder: level for level, folder in DIFFICULTY_FOLDERS.items()}.get(source.name)
        if difficulty is not None and named is not None and difficulty != named:
            raise ValueError(f"{source} holds the {named} images, not --difficulty {difficulty}")
        return source, difficulty or named or DEFAULT_DIFFICULTY
    difficulty = difficulty or DEFAULT_DIFFICULTY
    folder = DIFFICULTY_FOLDERS[difficulty]
    if (source / folder / "metadata").is_dir():
        return source / folder, difficulty
    return locate_folder(source, f"pathfinder{side}/{folder}", ["metadata"], HINT), difficulty


def metadata_files(folder: Path) -> list[Path]:
    """``folder/metadata/*.npy``, numbered names in numeric order (``2.npy`` before ``10.npy``)."""
    files = [path for path in (folder / "metadata").iterdir() if path.suffix == ".npy" and path.is_file()]
    if not files:
        raise FileNotFoundError(f"{folder / 'metadata'} holds no .npy metadata files. {HINT}")
    return sorted(files, key=lambda path: (len(path.stem), path.stem))


def read_metadata(path: Path) -> list[list[str]]:
    """The rows (lists of fields) of one metadata file: a text file, one space-separated row per
    line, or a binary ``.npy`` array (rows × fields) of strings."""
    raw = path.read_bytes()
    if not raw.startswith(NPY_MAGIC):
        try:
            return [line.split() for line in raw.decode("utf-8").splitlines() if line.strip()]
        except UnicodeDecodeError as error:
            raise ValueError(f"{path}: neither a .npy array nor UTF-8 text ({error})") from None
    try:
        array = np.load(path, allow_pickle=False)
    except ValueError as error:
        raise ValueError(f"{path}: not a readable array of strings ({error})") from None
    if array.size == 0:
        return []
    if array.ndim != 2 or array.dtype.kind not in "US":
        raise ValueError(
            f"{path}: expected a 2-D array of strings (rows × fields), got {array.dtype} {array.shape}"
        )
    if array.dtype.kind == "S":
        array = np.char.decode(array, "utf-8")
    return array.tolist()


def parse_row(fields: list[str], where: str) -> tuple[str, int]:
    """(image path relative to the difficulty folder, label) of one metadata row."""
    if len(fields) <= LABEL_FIELD:
        raise ValueError(
            f"{where}: expected at least {LABEL_FIELD + 1} fields (dir file _ label), got {fields}"
        )
    if fields[LABEL_FIELD] not in ("0", "1"):
        raise ValueError(
            f"{where}: label (field {LABEL_FIELD + 1}) must be 0 or 1, got {fields[LABEL_FIELD]!r}"
        )
    return f"{fields[0]}/{fields[1]}", int(fields[LABEL_FIELD])


def read_image(path: Path, side: int = SIDE) -> np.ndarray:
    """Pixels (side * side,) uint8, row-major, of an 8-bit grayscale side×side PNG."""
    try:
        with Image.open(path) as image:
            image.load()
            mode, size = image.mode, image.size
            pixels = np.asarray(image)
    except (OSError, SyntaxError) as error:
        raise ValueError(f"{path}: not a readable image ({error})") from None
    if mode != "L" or size != (side, side):
        raise ValueError(
            f"{path}: expected an 8-bit grayscale {side}x{side} image, got mode {mode} size {size}"
        )
    return pixels.reshape(-1)


def list_images(folder: Path) -> tuple[list[tuple[Path, int]], dict[str, int]]:
    """Every listed image that exists, with its label, in metadata order, and the counts of what
    was skipped (empty metadata files, rows whose image file is missing)."""
    images: list[tuple[Path, int]] = []
    files = metadata_files(folder)
    skipped = {"empty_metadata_files": 0, "missing_images": 0}
    for path in files:
        rows = read_metadata(path)
        skipped["empty_metadata_files"] += not rows
        for number, fields in enumerate(rows, start=1):
            relative, label = parse_row(fields, f"{path}:{number}")
            image = folder / relative
            if image.is_file():
                images.append((image, label))
            else:
                skipped["missing_images"] += 1
    return images, {"metadata_files": len(files), **skipped}
