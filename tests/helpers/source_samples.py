"""Source files in the exact on-disk formats of the real data sets, written by the tests themselves:
``write_imdb``, ``write_cifar_archive``, ``write_pathfinder_release`` and ``write_listops_2018``.

``real_sample`` gives the real public samples in ``../shared/fixtures`` beside the checkout when
they are there, and skips the test with its reason when they are not (a user's clone has none).
"""

from __future__ import annotations

import io
import pickle
import random
import statistics
import tarfile
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

SHARED_FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures"
SOURCES = ("built", "real sample")  # the parameters of the source fixtures in conftest.py

CIFAR_CLASSES = [
    b"airplane", b"automobile", b"bird", b"cat", b"deer", b"dog", b"frog", b"horse", b"ship", b"truck"
]  # fmt: skip
CIFAR_TEST_LABELS_START = [3, 8, 8, 0, 6]  # as the real test batch begins
CIFAR_TRAIN_PER_BATCH, CIFAR_TEST_COUNT = 12, 40  # the sizes of the real sample

REVIEWS = {
    "neg": [
        "Dull and slow.",
        "Le film était ennuyeux, trop long, et la fin n'a aucun sens. Pas recommandé — à éviter.",
        "I wanted to like this one. " * 160,  # 4320 bytes: longer than the 4000 kept
    ],
    "pos": [
        "A gem. <br /><br />Watch it twice.",
        "Naïve, charming and funny: a café in Zürich, a piñata, a smile. 10/10 ★",
        "Wonderful acting, wonderful story. " * 130,  # 4550 bytes
    ],
}
RATINGS = {"neg": (1, 2, 4), "pos": (7, 9, 10)}


def real_sample(name: str) -> Path:
    """The real public sample ``name`` of ../shared/fixtures, or skip with the reason."""
    path = SHARED_FIXTURES / name
    if not path.exists():
        pytest.skip(
            f"the real public sample {name} is in ../shared/fixtures, which is not beside this checkout"
        )
    return path


def write_imdb(root: Path) -> Path:
    """An ``aclImdb`` folder under ``root``; returns it. ``aclImdb/{train,test}/{pos,neg}/<id>_<rating>.txt``,
    UTF-8, three reviews per class and split, among them non-ASCII text and reviews longer than 4000
    bytes."""
    folder = root / "aclImdb"
    for split_number, split in enumerate(("train", "test")):
        for label, reviews in REVIEWS.items():
            (folder / split / label).mkdir(parents=True)
            for number, (review, rating) in enumerate(zip(reviews, RATINGS[label], strict=True)):
                text = review if split == "train" else review[::-1]  # test reviews differ from train's
                (folder / split / label / f"{100 * split_number + number}_{rating}.txt").write_bytes(
                    text.encode()
                )
    return folder


def cifar_batch(rng: np.random.Generator, labels: list[int], name: bytes) -> dict[bytes, object]:
    count = len(labels)
    return {
        b"batch_label": name,
        b"labels": labels,
        b"data": rng.integers(0, 256, (count, 3072), dtype=np.uint8),
        b"filenames": [f"image_{i:05d}.png".encode() for i in range(count)],
    }


def write_cifar_archive(path: Path, seed: int = 0) -> Path:
    """A ``cifar-10-python.tar.gz`` at ``path`` in the official layout, random pixels; returns ``path``.

    It holds ``cifar-10-batches-py/{data_batch_1..5,test_batch,batches.meta}``, pickles of dicts with
    byte-string keys (``b"data"`` uint8 (N, 3072) as 1024 R, 1024 G, 1024 B row-major, ``b"labels"``,
    ``b"filenames"``, ``b"batch_label"``)."""
    rng = np.random.default_rng(seed)
    members = {
        "batches.meta": {b"num_cases_per_batch": 10000, b"label_names": CIFAR_CLASSES, b"num_vis": 3072}
    }
    for number in range(1, 6):
        labels = rng.integers(0, 10, CIFAR_TRAIN_PER_BATCH).tolist()
        members[f"data_batch_{number}"] = cifar_batch(rng, labels, f"training batch {number} of 5".encode())
    test_labels = CIFAR_TEST_LABELS_START + rng.integers(0, 10, CIFAR_TEST_COUNT - 5).tolist()
    members["test_batch"] = cifar_batch(rng, test_labels, b"testing batch 1 of 1")
    with tarfile.open(path, "w:gz") as tar:
        folder = tarfile.TarInfo("cifar-10-batches-py")
        folder.type, folder.mode = tarfile.DIRTYPE, 0o755
        tar.addfile(folder)
        for name, content in members.items():
            data = pickle.dumps(content, protocol=2)
            info = tarfile.TarInfo(f"cifar-10-batches-py/{name}")
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return path


def random_tree(rng: random.Random, depth: int) -> int | tuple[str, list]:
    """A ListOps tree: a digit, or (operator, 2-5 arguments); operators grow rarer with depth."""
    if depth >= 4 or rng.random() > 0.6 / depth:
        return rng.randrange(10)
    operator = rng.choice(["[MIN", "[MAX", "[MED", "[SM"])
    return operator, [random_tree(rng, depth + 1) for _ in range(rng.randint(2, 5))]


def tree_value(tree: int | tuple[str, list]) -> int:
    if isinstance(tree, int):
        return tree
    operator, arguments = tree
    values = [tree_value(argument) for argument in arguments]
    if operator == "[MIN":
        return min(values)
    if operator == "[MAX":
        return max(values)
    if operator == "[SM":
        return sum(values) % 10
    return int(statistics.median(values))  # [MED: the mean of the middle two, truncated


def tree_source(tree: int | tuple[str, list]) -> str:
    """The 2018 syntax: ``( ( ( [SM 6 ) 5 ) ] )`` for [SM with arguments 6 and 5."""
    if isinstance(tree, int):
        return str(tree)
    operator, arguments = tree
    return (
        "( " * (len(arguments) + 1) + operator + "".join(f" {tree_source(a)} )" for a in arguments) + " ] )"
    )


def write_listops_2018(path: Path, rows: int = 40, seed: int = 0) -> Path:
    """A ListOps 2018 TSV at ``path``: header ``Target\\tSource``, then ``label\\tsource`` rows
    (bracketed prefix expressions with parentheses, labels computed by evaluating each tree)."""
    rng = random.Random(seed)
    operators = ["[MIN", "[MAX", "[MED", "[SM"]
    trees = [
        (rng.choice(operators), [random_tree(rng, 2) for _ in range(rng.randint(2, 5))]) for _ in range(rows)
    ]
    path.write_text("Target\tSource\n" + "".join(f"{tree_value(t)}\t{tree_source(t)}\n" for t in trees))
    return path


PATHFINDER_HARD = "curv_contour_length_14"


def write_png(path: Path, pixels: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(pixels).save(path)  # uint8 (H, W): 8-bit grayscale


def write_pathfinder_release(root: Path, num_per_batch: int = 12, side: int = 32) -> dict[bytes, int]:
    """``root/lra_release/lra_release/pathfinder<side>/curv_contour_length_14`` (side×side 8-bit
    grayscale PNGs, as the release's ``pathfinder32`` and Path-X's ``pathfinder128``) with the metadata of
    image batch 0 in a text file, of batch 1 in a binary .npy array of str and of batch 3 in one
    of bytes, an empty metadata file 2, and one row of batch 1 naming a missing image.
    Returns {image bytes: label} of the present images."""
    folder = root / "lra_release" / "lra_release" / f"pathfinder{side}" / PATHFINDER_HARD
    (folder / "metadata").mkdir(parents=True)
    rng = np.random.default_rng(7)
    expected = {}
    rows: dict[int, list[list[str]]] = {0: [], 1: [], 3: []}
    for batch in rows:
        for i in range(num_per_batch):
            label = (i + batch) % 2
            pixels = rng.integers(0, 256, size=(side, side), dtype=np.uint8)
            write_png(folder / "imgs" / str(batch) / f"sample_{i}.png", pixels)
            expected[pixels.tobytes()] = label
            rows[batch].append([f"imgs/{batch}", f"sample_{i}.png", str(i), str(label), "14", "1.5"])
    rows[1].append(["imgs/1", "sample_missing.png", "99", "1", "14", "1.5"])
    (folder / "metadata" / "0.npy").write_text("".join(" ".join(row) + "\n" for row in rows[0]))
    np.save(folder / "metadata" / "1.npy", np.array(rows[1]))
    (folder / "metadata" / "2.npy").write_text("")
    np.save(folder / "metadata" / "3.npy", np.array(rows[3], dtype=bytes))
    return expected
