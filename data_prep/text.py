"""Text: IMDB reviews (aclImdb) as UTF-8 byte tokens, into the prepared format.

    python -m data_prep text --source PATH/TO/aclImdb            # or aclImdb_v1.tar.gz, or its parent
    python -m data_prep text --download                          # the official archive, MD5-verified

Token = byte + 1 (0 = pad), truncated to ``--seq-len`` (default 4000); labels pos = 1, neg = 0.
Files are read in sorted order. IMDB has no validation set: ``--val-fraction`` (default 0.1) of
train, drawn with ``--seed``, becomes val; 0 leaves val empty (LRA's protocol uses test as val).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

from data_prep.bytes_tokens import BYTE_VOCAB_SIZE, byte_tokens
from data_prep.commands import command, rebuild_command
from data_prep.download import download
from data_prep.sources import locate_folder, source_folder
from data_prep.storage import PreparedWriter

URL = "https://ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz"
MD5 = "7c2ac02c03563afcf9b574c7e56c153a"  # as published with torchtext's IMDB dataset
CLASSES = ("neg", "pos")  # label = index
SOURCE_SPLITS = ("train", "test")
DEFAULT_SEQ_LEN = 4000


def is_review(name: str) -> bool:
    """Whether an archive member is a labelled review: ``aclImdb/{train,test}/{pos,neg}/*.txt``."""
    parts = name.split("/")
    return (
        len(parts) >= 4 and parts[-3] in SOURCE_SPLITS and parts[-2] in CLASSES and parts[-1].endswith(".txt")
    )


def list_reviews(folder: Path, split: str) -> list[tuple[Path, int]]:
    """``(file, label)`` of one split, sorted by path (neg before pos, file names in string order)."""
    return [
        (path, label)
        for label, name in enumerate(CLASSES)
        for path in sorted((folder / split / name).glob("*.txt"))
    ]


def split_train(count: int, val_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Seeded (train indices, val indices), each in ascending order, val = round(fraction * count)."""
    order = np.random.default_rng(seed).permutation(count)
    num_val = round(val_fraction * count)
    return np.sort(order[num_val:]), np.sort(order[:num_val])


def run_text(args: argparse.Namespace) -> None:
    started = time.time()
    if not 0.0 <= args.val_fraction < 1.0 or args.seq_len < 1 or args.seed < 0:
        raise ValueError(
            f"need 0 <= --val-fraction < 1, --seq-len >= 1 and --seed >= 0, "
            f"got {args.val_fraction}, {args.seq_len}, {args.seed}"
        )
    if args.download:
        source = download(URL, Path(args.root) / "downloads" / "aclImdb_v1.tar.gz", md5=MD5)
    else:
        source = args.source = args.source.resolve()
    meta = {
        "task": "text",
        "vocab_size": BYTE_VOCAB_SIZE,
        "num_classes": len(CLASSES),
        "classes": list(CLASSES),
        "seq_len": args.seq_len,
        "source": str(source),
        "seed": args.seed,
        "val_fraction": args.val_fraction,
        "command": rebuild_command(
            "text", args, ["name", "source", "download", "val_fraction", "seed", "seq_len"]
        ),
    }
    hint = "Give the aclImdb folder (or its parent), aclImdb_v1.tar.gz, or use --download."
    with source_folder(source, args.root, "text", is_review) as unpacked:
        folder = locate_folder(unpacked, "aclImdb", ["train/pos", "train/neg", "test/pos", "test/neg"], hint)
        train_files = list_reviews(folder, "train")
        train_index, val_index = split_train(len(train_files), args.val_fraction, args.seed)
        splits = {
            "train": [train_files[i] for i in train_index],
            "val": [train_files[i] for i in val_index],
            "test": list_reviews(folder, "test"),
        }
        with PreparedWriter(args.root, args.name, meta) as writer:
            truncated = {}
            for split, files in splits.items():
                arrays = writer.create_split(split, len(files), (args.seq_len,), BYTE_VOCAB_SIZE)
                truncated[split] = 0
                with tqdm(files, desc=f"text {split}", unit="review") as reviews:  # closed on an error too
                    for index, (path, label) in enumerate(reviews):
                        data = path.read_bytes()
                        tokens = byte_tokens(data, args.seq_len)
                        arrays.tokens[index, : len(tokens)] = tokens
                        arrays.lengths[index] = len(tokens)
                        arrays.labels[index] = label
                        truncated[split] += len(data) > args.seq_len
            writer.meta["truncated"] = truncated
    writer.report(f"seq_len {args.seq_len}, truncated {sum(truncated.values())}", started)


@command("text", help="Text: IMDB reviews (aclImdb) as byte tokens (--source PATH or --download)")
def configure(parser: argparse.ArgumentParser):
    origin = parser.add_mutually_exclusive_group(required=True)
    origin.add_argument("--source", type=Path, help="the aclImdb folder (or its parent) or aclImdb_v1.tar.gz")
    origin.add_argument(
        "--download", action="store_true", help=f"fetch {URL} into ROOT/downloads (MD5 {MD5}, resumable)"
    )
    parser.add_argument("--name", default="text", help="folder name of the set (default: text)")
    parser.add_argument("--val-fraction", type=float, default=0.1, help="share of train held out as val")
    parser.add_argument("--seed", type=int, default=0, help="seed of the validation split (default: 0)")
    parser.add_argument("--seq-len", type=int, default=DEFAULT_SEQ_LEN, help="bytes kept per review")
    return run_text
