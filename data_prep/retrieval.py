"""Retrieval: AAN citation pairs (LRA's ``tsv_data``) as two byte-token documents per example.

    python -m data_prep retrieval --source PATH/TO/lra_release   # any level, or tsv_data/, or lra_release.gz

Files ``new_aan_pairs.{train,eval,test}.tsv`` give the train / val / test splits: no header,
columns ``label, id1, id2, text1, text2``, tab-separated, quotes are plain text (no CSV quoting),
labels written ``0``, ``1``, ``0.0`` or ``1.0``. Each text becomes byte + 1 tokens (0 = pad),
truncated to ``--seq-len``: tokens (N, 2, seq_len), lengths (N, 2). Rows are counted first and
then written one by one into the memory-mapped arrays, so the set never has to fit in RAM.
From ``lra_release.gz`` only these three files are unpacked (into a temporary folder).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator
from pathlib import Path

from tqdm import tqdm

from data_prep.bytes_tokens import BYTE_VOCAB_SIZE, byte_tokens
from data_prep.commands import command, rebuild_command
from data_prep.sources import locate_folder, source_folder
from data_prep.storage import PreparedWriter

FILES = {
    "train": "new_aan_pairs.train.tsv",
    "val": "new_aan_pairs.eval.tsv",
    "test": "new_aan_pairs.test.tsv",
}
LABELS = {b"0": 0, b"1": 1, b"0.0": 0, b"1.0": 1}
NUM_FIELDS = 5  # label, id1, id2, text1, text2
DEFAULT_SEQ_LEN = 4000


def read_pairs(path: Path) -> Iterator[tuple[bytes, bytes, int]]:
    """Yield ``(text1, text2, label)`` per non-empty line of an AAN TSV file (raw bytes)."""
    with open(path, "rb") as handle:
        for number, line in enumerate(handle, start=1):
            line = line.rstrip(b"\r\n")
            if not line:
                continue
            fields = line.split(b"\t")
            if len(fields) != NUM_FIELDS:
                raise ValueError(
                    f"{path}:{number}: expected {NUM_FIELDS} tab-separated fields "
                    f"(label, id1, id2, text1, text2), found {len(fields)}"
                )
            label = LABELS.get(fields[0].strip())
            if label is None:
                raise ValueError(f"{path}:{number}: label {fields[0][:20]!r} is not one of 0, 1, 0.0, 1.0")
            yield fields[3], fields[4], label


def count_pairs(path: Path) -> int:
    """Number of non-empty lines of a TSV file."""
    with open(path, "rb") as handle:
        return sum(1 for line in handle if line.strip(b"\r\n"))


def is_pair_file(name: str) -> bool:
    """Whether an archive member is one of the AAN TSV files."""
    return name.endswith(tuple(f"tsv_data/{file}" for file in FILES.values()))


def run_retrieval(args: argparse.Namespace) -> None:
    started = time.time()
    args.source = args.source.resolve()
    if args.seq_len < 1:
        raise ValueError(f"--seq-len must be >= 1, got {args.seq_len}")
    meta = {
        "task": "retrieval",
        "vocab_size": BYTE_VOCAB_SIZE,
        "num_classes": 2,
        "seq_len": args.seq_len,
        "source": str(args.source),
        "command": rebuild_command("retrieval", args, ["name", "source", "seq_len"]),
    }
    hint = "Give the lra_release folder (any level), its tsv_data/ folder, or lra_release.gz."
    with source_folder(args.source, args.root, "retrieval", is_pair_file, stop_after=len(FILES)) as unpacked:
        folder = locate_folder(unpacked, "tsv_data", list(FILES.values()), hint)
        with PreparedWriter(args.root, args.name, meta) as writer:
            truncated = {}
            for split, file in FILES.items():
                path = folder / file
                count = count_pairs(path)
                arrays = writer.create_split(split, count, (2, args.seq_len), BYTE_VOCAB_SIZE)
                truncated[split] = 0
                pairs = tqdm(read_pairs(path), total=count, desc=f"retrieval {split}", unit="pair")
                with pairs:  # the bar is closed before an error is reported
                    for index, (first, second, label) in enumerate(pairs):
                        for side, text in enumerate((first, second)):
                            tokens = byte_tokens(text, args.seq_len)
                            arrays.tokens[index, side, : len(tokens)] = tokens
                            arrays.lengths[index, side] = len(tokens)
                            truncated[split] += len(text) > args.seq_len
                        arrays.labels[index] = label
            writer.meta["truncated_documents"] = truncated
    details = f"seq_len {args.seq_len} per document, truncated documents {sum(truncated.values())}"
    writer.report(details, started, unit="pairs")


@command("retrieval", help="Retrieval: AAN document pairs from the LRA release (--source PATH)")
def configure(parser: argparse.ArgumentParser):
    parser.add_argument(
        "--source",
        type=Path,
        required=True,
        help="the lra_release folder (any level), its tsv_data/ folder, or lra_release.gz "
        "(get it with: python -m data_prep lra-release --download)",
    )
    parser.add_argument("--name", default="retrieval", help="folder name of the set (default: retrieval)")
    parser.add_argument("--seq-len", type=int, default=DEFAULT_SEQ_LEN, help="bytes kept per document")
    return run_retrieval
