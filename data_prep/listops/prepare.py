"""ListOps: the built-in generator, or the LRA / 2018 TSV files, into the prepared format.

    python -m data_prep listops                                   # generate 96k/2k/2k: set listops-generated
    python -m data_prep listops --name listops-demo --num-train 2000 --num-val 200 --num-test 200 \\
        --min-length 20 --max-length 200 --max-depth 4             # short trees for quick experiments
    python -m data_prep listops --source PATH/TO/lra_release       # LRA's basic_*.tsv: set listops
    python -m data_prep listops --name listops-2018 --source train_d20s.tsv --split train \\
        --source test_d20s.tsv --split test                        # 2018 files: one split per file

Tokens: 0 = pad, then ``[MIN [MAX [MED [SM ]`` and the digits 0-9 (vocab 16); the brackets ``]``
are kept (as in LRA's corrected ListOps files), ``(`` and ``)`` are dropped. Rows longer than
``--seq-len`` are truncated and counted in meta.json (``truncated``). The same seed and options give
identical generated arrays (``write_generated``).
"""

from __future__ import annotations

import argparse
import hashlib
import time
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path

import numpy as np
from tqdm import tqdm

from data_prep.commands import command, rebuild_command
from data_prep.listops.generator import VOCAB, TreeShape, generate_chunk
from data_prep.sources import locate_folder
from data_prep.storage import SPLITS, PreparedWriter, SplitArrays

VOCAB_SIZE = len(VOCAB)
NUM_CLASSES = 10
DEFAULT_SEQ_LEN = 2000
TOKEN_IDS = {token: index for index, token in enumerate(VOCAB) if index > 0}
DROPPED_TOKENS = frozenset({"(", ")"})
LRA_FILES = {"train": "basic_train.tsv", "val": "basic_val.tsv", "test": "basic_test.tsv"}
# Header -> (source column, target column): LRA writes "Source\tTarget", the 2018 release "Target\tSource".
TSV_HEADERS = {("Source", "Target"): (0, 1), ("Target", "Source"): (1, 0)}
CHUNK_ROOTS = 20_000  # roots drawn per generator chunk (part of what a seed reproduces)
STALL_CHUNKS = 50  # chunks in a row without a new tree before giving up


def tokenize(source: str, where: str) -> list[int]:
    """Token ids of a bracketed ListOps expression (parentheses dropped); ``where`` names file:line."""
    ids = []
    for token in source.split():
        if token in DROPPED_TOKENS:
            continue
        index = TOKEN_IDS.get(token)
        if index is None:
            raise ValueError(f"{where}: unknown ListOps token {token!r}; known: {' '.join(TOKEN_IDS)} ( )")
        ids.append(index)
    return ids


def read_tsv(path: Path) -> Iterator[tuple[list[int], int]]:
    """Yield ``(token ids, label)`` per row of a ListOps TSV (either header order, ``\\r\\n`` allowed)."""
    with open(path, encoding="utf-8", newline="") as handle:
        header = tuple(handle.readline().rstrip("\r\n").split("\t"))
        if header not in TSV_HEADERS:
            raise ValueError(
                f"{path}:1: header {header!r} is not a ListOps header "
                "('Source\\tTarget' or 'Target\\tSource')"
            )
        source_column, target_column = TSV_HEADERS[header]
        for number, line in enumerate(handle, start=2):
            line = line.rstrip("\r\n")
            if not line:
                continue
            fields = line.split("\t")
            where = f"{path}:{number}"
            if len(fields) != 2:
                raise ValueError(f"{where}: expected 2 tab-separated fields, found {len(fields)}")
            target = fields[target_column].strip()
            if target not in {str(digit) for digit in range(NUM_CLASSES)}:
                raise ValueError(f"{where}: label {target!r} is not a digit 0-9")
            yield tokenize(fields[source_column], where), int(target)


def count_rows(path: Path) -> int:
    """Number of non-empty data rows (after the header) of a TSV file."""
    with open(path, "rb") as handle:
        handle.readline()
        return sum(1 for line in handle if line.strip(b"\r\n"))


def put_row(arrays: SplitArrays, index: int, ids: np.ndarray | list[int], label: int) -> bool:
    """Write one example, truncated to the row width; returns whether it was truncated."""
    seq_len = arrays.tokens.shape[1]
    kept = min(len(ids), seq_len)
    arrays.tokens[index, :kept] = ids[:kept]
    arrays.lengths[index] = kept
    arrays.labels[index] = label
    return len(ids) > seq_len


def write_from_files(writer: PreparedWriter, files: dict[str, Path], seq_len: int) -> dict[str, int]:
    """Fill one split per TSV file; returns the number of truncated rows per split."""
    truncated = {}
    for split, path in files.items():
        rows = count_rows(path)
        if rows == 0:
            raise ValueError(f"{path} holds no examples after its header")
        arrays = writer.create_split(split, rows, (seq_len,), VOCAB_SIZE)
        truncated[split] = 0
        with tqdm(read_tsv(path), total=len(arrays.labels), desc=f"listops {split}", unit="row") as examples:
            for index, (ids, label) in enumerate(examples):
                truncated[split] += put_row(arrays, index, ids, label)
    return truncated


def write_generated(
    writer: PreparedWriter, sizes: dict[str, int], shape: TreeShape, seed: int, seq_len: int
) -> dict[str, int]:
    """Fill the splits with unique generated trees (train, then val, then test); returns statistics.

    Trees come from chunks whose generators are seeded by ``(seed, chunk index)`` and are
    de-duplicated across all splits in generation order."""
    arrays = {
        split: writer.create_split(split, size, (seq_len,), VOCAB_SIZE) for split, size in sizes.items()
    }
    slots = [(split, index) for split, size in sizes.items() for index in range(size)]
    seen: set[bytes] = set()
    stats = {"duplicates_skipped": 0, "chunks": 0, **{f"truncated_{split}": 0 for split in sizes}}
    stalled = 0
    with tqdm(total=len(slots), desc="listops generate", unit="tree") as progress:
        while len(seen) < len(slots):
            tokens, lengths, labels = generate_chunk(seed, stats["chunks"], CHUNK_ROOTS, shape)
            stats["chunks"] += 1
            added = 0
            for row in range(len(labels)):
                if len(seen) == len(slots):
                    break
                ids = tokens[row, : lengths[row]]
                key = hashlib.blake2b(ids.tobytes(), digest_size=16).digest()
                if key in seen:
                    stats["duplicates_skipped"] += 1
                    continue
                split, index = slots[len(seen)]
                seen.add(key)
                stats[f"truncated_{split}"] += put_row(arrays[split], index, ids, int(labels[row]))
                added += 1
            progress.update(added)
            stalled = 0 if added else stalled + 1
            if stalled == STALL_CHUNKS:
                raise ValueError(
                    f"found only {len(seen)} distinct trees of {len(slots)} after {stats['chunks']} chunks: "
                    f"widen --min-length/--max-length ({shape.min_length}, {shape.max_length}) or raise "
                    f"--max-depth/--max-args, or ask for fewer examples"
                )
    return stats


def source_files(sources: list[Path], splits: list[str] | None) -> dict[str, Path]:
    """Map splits to TSV files: a folder holds LRA's ``basic_*.tsv``; files are paired with ``--split``."""
    splits = splits or []
    if len(sources) == 1 and sources[0].is_dir() and not splits:
        hint = "Give the lra_release folder, its listops-1000/ folder, or TSV files with --split."
        folder = locate_folder(sources[0], "listops-1000", list(LRA_FILES.values()), hint)
        return {split: folder / name for split, name in LRA_FILES.items()}
    if len(splits) != len(sources):
        raise ValueError(
            "give one --split (train, val or test) after each --source file, e.g. "
            "--source train_d20s.tsv --split train --source test_d20s.tsv --split test; "
            "or a single --source folder holding LRA's basic_{train,val,test}.tsv"
        )
    if len(set(splits)) != len(splits):
        raise ValueError(f"each split may be filled by one file only, got --split {' '.join(splits)}")
    for path in sources:
        if not path.is_file():
            raise FileNotFoundError(f"ListOps TSV file {path} does not exist")
    return dict(zip(splits, sources, strict=True))


def run_listops(args: argparse.Namespace) -> None:
    started = time.time()
    meta = {"task": "listops", "vocab_size": VOCAB_SIZE, "num_classes": NUM_CLASSES, "vocab": list(VOCAB)}
    args.name = args.name or ("listops" if args.source else "listops-generated")
    if args.source:
        args.source = [path.resolve() for path in args.source]
        files = source_files(args.source, args.split)
        args.seq_len = DEFAULT_SEQ_LEN if args.seq_len is None else args.seq_len
        options = ["name", "source", "split", "seq_len"]
        meta.update(source="; ".join(str(path) for path in args.source))
        meta.update(source_files={split: str(path) for split, path in files.items()})
    else:
        shape = TreeShape(args.max_depth, args.max_args, args.min_length, args.max_length)
        args.seq_len = args.max_length if args.seq_len is None else args.seq_len
        options = ["name", "num_train", "num_val", "num_test", "seed"]
        options += ["min_length", "max_length", "max_depth", "max_args", "seq_len"]
        sizes = {"train": args.num_train, "val": args.num_val, "test": args.num_test}
        if min(sizes.values()) < 0 or args.seed < 0:
            raise ValueError(f"split sizes and --seed must be >= 0, got {sizes}, seed {args.seed}")
        meta.update(
            source="generator", seed=args.seed, generator={**asdict(shape), "chunk_roots": CHUNK_ROOTS}
        )
    if args.seq_len < 1:
        raise ValueError(f"--seq-len must be >= 1, got {args.seq_len}")
    meta.update(seq_len=args.seq_len, command=rebuild_command("listops", args, options))
    with PreparedWriter(args.root, args.name, meta) as writer:
        if args.source:
            writer.meta["truncated"] = write_from_files(writer, files, args.seq_len)
        else:
            stats = write_generated(writer, sizes, shape, args.seed, args.seq_len)
            writer.meta["truncated"] = {split: stats.pop(f"truncated_{split}") for split in sizes}
            writer.meta.update(stats)
    truncated = sum(writer.meta["truncated"].values())
    writer.report(f"seq_len {args.seq_len}, vocab {VOCAB_SIZE}, truncated {truncated}", started)


@command("listops", help="ListOps: the built-in generator (default) or the LRA / 2018 TSV files (--source)")
def configure(parser: argparse.ArgumentParser):
    parser.add_argument(
        "--name",
        default=None,
        help="folder name of the set (default: listops from LRA files, listops-generated from the generator)",
    )
    parser.add_argument("--num-train", type=int, default=96_000)
    parser.add_argument("--num-val", type=int, default=2_000)
    parser.add_argument("--num-test", type=int, default=2_000)
    parser.add_argument("--seed", type=int, default=0, help="generator seed (default: 0)")
    parser.add_argument("--min-length", type=int, default=500, help="keep trees longer than this (tokens)")
    parser.add_argument("--max-length", type=int, default=2000, help="keep trees shorter than this (tokens)")
    parser.add_argument("--max-depth", type=int, default=10, help="deepest level (the root has depth 1)")
    parser.add_argument("--max-args", type=int, default=10, help="most arguments of an operator (at least 2)")
    parser.add_argument(
        "--seq-len",
        type=int,
        default=None,
        help="row width; longer rows are truncated (default: --max-length, or 2000 with --source)",
    )
    parser.add_argument(
        "--source",
        type=Path,
        action="append",
        help="read TSV files instead of generating: a folder with LRA's basic_{train,val,test}.tsv "
        "(lra_release at any level, or listops-1000/), or a TSV file followed by --split; repeatable",
    )
    parser.add_argument(
        "--split",
        action="append",
        choices=SPLITS,
        help="the split filled by the preceding --source file (2018 ListOps files have no val split)",
    )
    return run_listops
