"""Image: CIFAR-10 as grayscale pixel tokens, into the prepared format.

    python -m data_prep image --source PATH/TO/cifar-10-python.tar.gz   # or cifar-10-batches-py/
    python -m data_prep image --download                                # the official archive, MD5-verified

Each image becomes 1024 tokens (its 32x32 grayscale pixels, row-major), vocab 256; a black pixel
is token 0 and there is no padding (every length is 1024). Splits as LRA: train = the first 90%
of data_batch_1..5 in order, val = the last 10%, test = test_batch in order. The batches are
Python pickles: only read archives you trust (``--download`` verifies the published MD5).
"""

from __future__ import annotations

import argparse
import pickle
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

from data_prep.commands import command, rebuild_command
from data_prep.download import download
from data_prep.sources import locate_folder, source_folder
from data_prep.storage import PreparedWriter

URL = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
MD5 = "c58f30108f718f92721af3b95e74349a"  # published on the CIFAR-10 page
FOLDER = "cifar-10-batches-py"
TRAIN_BATCHES = tuple(f"data_batch_{i}" for i in range(1, 6))
TEST_BATCH = "test_batch"
SIDE = 32
PIXELS = SIDE * SIDE
VOCAB_SIZE = 256
NUM_CLASSES = 10
TRAIN_SHARE = 0.9
# tf.image.rgb_to_grayscale's weights.
GRAY_WEIGHTS = np.array([0.2989, 0.5870, 0.1140], dtype=np.float32)


def to_grayscale(rgb: np.ndarray) -> np.ndarray:
    """CIFAR rows (N, 3072) uint8 (1024 R, 1024 G, 1024 B, row-major) -> gray (N, 1024) uint8.

    Exactly TensorFlow's ``rgb_to_grayscale`` on uint8 in float32: ``convert_image_dtype`` to
    float multiplies by 1/255, the weighted sum follows, and ``convert_image_dtype`` back to uint8
    multiplies by 255 + 0.5 and casts, i.e. truncates (tensorflow/python/ops/image_ops_impl.py:
    ``scale = dtype.max + 0.5  # avoid rounding problems in the cast``). Saturation cannot bite:
    the weights sum to 0.9999, so the largest value is 255.47.
    """
    planes = rgb.reshape(len(rgb), 3, PIXELS).astype(np.float32) * np.float32(1.0 / 255.0)
    gray = np.einsum("ncp,c->np", planes, GRAY_WEIGHTS)
    return np.clip(gray * np.float32(255.5), 0, 255).astype(np.uint8)


def read_pickle(path: Path) -> dict:
    """The dict pickled in a CIFAR-10 python file; ``ValueError`` naming the file when it is damaged."""
    try:
        with open(path, "rb") as handle:
            content = pickle.load(handle, encoding="bytes")
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError) as error:
        raise ValueError(f"{path} is not a readable pickle (truncated or damaged: {error})") from None
    if not isinstance(content, dict):
        raise ValueError(f"{path} holds a {type(content).__name__}, not the dict of a CIFAR-10 python file")
    return content


def load_batch(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Images (N, 3072) uint8 and labels (N,) of one CIFAR-10 python batch."""
    batch = read_pickle(path)
    try:
        data = np.asarray(batch[b"data"], dtype=np.uint8)
        labels = np.asarray(batch[b"labels"], dtype=np.int64)
    except (KeyError, TypeError) as error:
        raise ValueError(f"{path} is not a CIFAR-10 python batch (no {error})") from None
    if data.ndim != 2 or data.shape[1] != 3 * PIXELS or len(labels) != len(data):
        raise ValueError(
            f"{path}: expected data (N, {3 * PIXELS}) and N labels, got {data.shape}, {len(labels)}"
        )
    if len(labels) and not 0 <= labels.min() <= labels.max() < NUM_CLASSES:
        raise ValueError(f"{path}: labels outside 0..{NUM_CLASSES - 1}")
    return data, labels


def class_names(folder: Path) -> list[str] | None:
    """The label names from ``batches.meta`` when present."""
    meta_file = folder / "batches.meta"
    if not meta_file.is_file():
        return None
    try:
        return [name.decode() for name in read_pickle(meta_file)[b"label_names"]]
    except (KeyError, TypeError, AttributeError) as error:
        raise ValueError(f"{meta_file} has no list of label names ({error!r})") from None


def run_image(args: argparse.Namespace) -> None:
    started = time.time()
    if args.download:
        source = download(URL, Path(args.root) / "downloads" / "cifar-10-python.tar.gz", md5=MD5)
    else:
        source = args.source = args.source.resolve()
    hint = "Give cifar-10-python.tar.gz or the cifar-10-batches-py folder (or its parent), or use --download."
    with source_folder(source, args.root, "image", lambda name: f"{FOLDER}/" in name) as unpacked:
        folder = locate_folder(unpacked, FOLDER, [*TRAIN_BATCHES, TEST_BATCH], hint)
        with tqdm([*TRAIN_BATCHES, TEST_BATCH], desc="image read") as batch_names:  # closed on an error too
            batches = [load_batch(folder / name) for name in batch_names]
        names = class_names(folder)
    train_gray = np.concatenate([to_grayscale(data) for data, _ in batches[:-1]])
    train_labels = np.concatenate([labels for _, labels in batches[:-1]])
    num_train = int(len(train_labels) * TRAIN_SHARE)
    splits = {
        "train": (train_gray[:num_train], train_labels[:num_train]),
        "val": (train_gray[num_train:], train_labels[num_train:]),
        "test": (to_grayscale(batches[-1][0]), batches[-1][1]),
    }
    meta = {
        "task": "image",
        "vocab_size": VOCAB_SIZE,
        "num_classes": NUM_CLASSES,
        "classes": names,
        "seq_len": PIXELS,
        "source": str(source),
        "grayscale": "tf.image.rgb_to_grayscale: 0.2989 R + 0.5870 G + 0.1140 B on [0, 1], *255.5, truncated",
        "command": rebuild_command("image", args, ["name", "source", "download"]),
    }
    with PreparedWriter(args.root, args.name, meta) as writer:
        for split, (gray, labels) in splits.items():
            arrays = writer.create_split(split, len(labels), (PIXELS,), VOCAB_SIZE)
            arrays.tokens[:] = gray
            arrays.lengths[:] = PIXELS
            arrays.labels[:] = labels
    writer.report(f"{PIXELS} grayscale pixels each", started)


@command("image", help="Image: CIFAR-10 as 1024 grayscale pixel tokens (--source PATH or --download)")
def configure(parser: argparse.ArgumentParser):
    origin = parser.add_mutually_exclusive_group(required=True)
    origin.add_argument(
        "--source", type=Path, help="cifar-10-python.tar.gz or the cifar-10-batches-py folder"
    )
    origin.add_argument(
        "--download", action="store_true", help=f"fetch {URL} into ROOT/downloads (MD5 {MD5}, resumable)"
    )
    parser.add_argument("--name", default="image", help="folder name of the set (default: image)")
    return run_image
