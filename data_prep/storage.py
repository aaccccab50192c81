"""The prepared format and its writer: one folder per data set, arrays, checksums, atomic writes.

Layout of ``ROOT/NAME/`` (NAME is the task, or ``task-variant`` such as ``listops-demo``)::

    meta.json                 vocab size, classes, sequence length, source, counts, seed, checksums,
                              each split's majority-class share
    stamps.json               each array's (bytes, mtime_ns, sha256) when its SHA-256 was last checked
    {split}.tokens.npy        (N, seq_len) or, for retrieval, (N, 2, seq_len); 0 = pad; smallest uint dtype
    {split}.lengths.npy       (N,) or (N, 2) int32: number of real tokens
    {split}.labels.npy        (N,) int64

A set is written into a hidden temporary folder that is renamed into place only once every
array and ``meta.json`` are complete, so an interrupted preparation never leaves a set that
loads. Reading (``data_prep.reader``) memory-maps the arrays and checks each one's size and
SHA-256 against meta.json, or trusts a stamp that still matches the file.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

FORMAT_VERSION = 1
SPLITS = ("train", "val", "test")
ARRAY_KINDS = ("tokens", "lengths", "labels")
META_FILE = "meta.json"
STAMPS_FILE = "stamps.json"


class DataNotPreparedError(FileNotFoundError):
    """The prepared set does not exist; the message names the command that prepares it."""


class CorruptDataError(ValueError):
    """A prepared array is missing, truncated or altered; the message names the command that rebuilds it."""


def default_root() -> Path:
    """The data root: ``$LRA_DATA`` if set, else ``./data``."""
    return Path(os.environ.get("LRA_DATA", "data"))


def token_dtype(vocab_size: int) -> np.dtype:
    """The smallest unsigned dtype that holds every token id in [0, vocab_size)."""
    for dtype in (np.uint8, np.uint16, np.uint32):
        if vocab_size - 1 <= np.iinfo(dtype).max:
            return np.dtype(dtype)
    raise ValueError(f"vocab_size {vocab_size} is too large")


def file_digest(path: Path, algorithm: str = "sha256", chunk_bytes: int = 1 << 24) -> str:
    """Hex digest (``sha256``, ``md5``, ...) of a file, read in chunks (works on files larger than RAM)."""
    digest = hashlib.new(algorithm)
    with open(path, "rb") as handle:
        while chunk := handle.read(chunk_bytes):
            digest.update(chunk)
    return digest.hexdigest()


def hashed_stamp(path: Path) -> dict[str, Any]:
    """``{bytes, mtime_ns, sha256}`` of ``path``: its size and modification time, then its SHA-256.
    The file is stat'ed before it is hashed, so a change during the hash leaves a stamp that no longer
    matches the file."""
    status = path.stat()
    return {"bytes": status.st_size, "mtime_ns": status.st_mtime_ns, "sha256": file_digest(path)}


def write_stamps(directory: Path, stamps: dict[str, dict[str, Any]]) -> None:
    """Write ``directory/stamps.json`` (file name -> ``hashed_stamp``) atomically."""
    write_json(directory / STAMPS_FILE, stamps)


def majority_share(labels: np.ndarray) -> float | None:
    """The share (0-1) of the most frequent label in ``labels`` (N,): the accuracy of always predicting
    it, what a run at chance scores. None for an empty split."""
    if len(labels) == 0:
        return None
    return float(np.unique(labels, return_counts=True)[1].max() / len(labels))


@contextmanager
def partial_file(path: Path) -> Iterator[Path]:
    """The temporary name beside ``path`` that a whole new file is written under before it replaces
    ``path``; on any error (a full disk, a signal) it is removed, and an ``OSError`` names ``path``."""
    partial = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        yield partial
    except BaseException as error:
        partial.unlink(missing_ok=True)
        if isinstance(error, OSError):
            raise naming(error, path) from error
        raise


def write_json(path: Path, content: dict[str, Any]) -> Path:
    """Write ``content`` to ``path`` atomically (a reader never sees half a file, an error leaves no
    partial file, and an ``OSError`` names ``path``); a value JSON cannot hold is written as its ``str``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with partial_file(path) as partial:
        partial.write_text(json.dumps(content, indent=2, default=str) + "\n")
        os.replace(partial, path)
    return path


def naming(error: OSError, path: Path) -> OSError:
    """``error`` as an ``OSError`` of its errno that names ``path``, the file being written (rather
    than its temporary file, or nothing: a failed ``write`` names none)."""
    return OSError(error.errno, error.strerror, str(path))


def write_meta(directory: Path, meta: dict[str, Any]) -> None:
    """Write ``directory/meta.json`` atomically."""
    write_json(directory / META_FILE, meta)


@dataclass
class SplitArrays:
    """Writable memory-mapped arrays of one split; fill them in place."""

    tokens: np.ndarray  # (N, seq_len) or (N, 2, seq_len)
    lengths: np.ndarray  # (N,) or (N, 2) int32
    labels: np.ndarray  # (N,) int64


class PreparedWriter:
    """Writes one prepared set atomically.

    Usage::

        with PreparedWriter(root, "listops", meta) as writer:
            arrays = writer.create_split("train", num_examples, (seq_len,), vocab_size)
            arrays.tokens[i, :n] = ...; arrays.lengths[i] = n; arrays.labels[i] = y

    ``meta`` must hold at least ``task``, ``vocab_size``, ``num_classes``, ``seq_len``, ``source``
    and ``command`` (the command that rebuilds the set); counts, dtypes and checksums are added.
    On leaving the block without an error the set replaces any older one under the same name;
    on an error the temporary folder is removed and any older set is left untouched.
    """

    REQUIRED_META = ("task", "vocab_size", "num_classes", "seq_len", "source", "command")

    def __init__(self, root: Path | str, name: str, meta: dict[str, Any]) -> None:
        missing = [key for key in self.REQUIRED_META if key not in meta]
        if missing:
            raise ValueError(f"meta for {name!r} lacks {missing}")
        self.root = Path(root)
        self.name = name
        self.meta = dict(meta)
        self.final_dir = self.root / name
        self.tmp_dir: Path | None = None
        self.arrays: dict[str, SplitArrays] = {}
        self.counts: dict[str, int] = {}  # examples per split, once the set is in place

    def __enter__(self) -> PreparedWriter:
        self.root.mkdir(parents=True, exist_ok=True)
        self.tmp_dir = Path(tempfile.mkdtemp(prefix=f".{self.name}.tmp-", dir=self.root))
        self.tmp_dir.chmod(0o755)  # mkdtemp makes it private; the set is shared like any data folder
        return self

    def create_split(
        self, split: str, num_examples: int, token_shape: tuple[int, ...], vocab_size: int
    ) -> SplitArrays:
        """Allocate zero-filled arrays for ``split`` (tokens (N, *token_shape))."""
        assert self.tmp_dir is not None, "use PreparedWriter as a context manager"
        if split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {split!r}")

        def open_array(kind: str, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
            path = self.tmp_dir / f"{split}.{kind}.npy"
            return np.lib.format.open_memmap(path, mode="w+", dtype=dtype, shape=shape)

        length_shape = (num_examples,) + token_shape[:-1]
        arrays = SplitArrays(
            tokens=open_array("tokens", (num_examples, *token_shape), token_dtype(vocab_size)),
            lengths=open_array("lengths", length_shape, np.dtype(np.int32)),
            labels=open_array("labels", (num_examples,), np.dtype(np.int64)),
        )
        self.arrays[split] = arrays
        return arrays

    def __exit__(self, exc_type, exc, traceback) -> None:
        assert self.tmp_dir is not None
        if exc_type is not None:
            self.arrays.clear()
            shutil.rmtree(self.tmp_dir, ignore_errors=True)
            return
        try:
            self._finish()
        except BaseException:
            shutil.rmtree(self.tmp_dir, ignore_errors=True)
            raise

    def report(self, details: str, started: float, unit: str = "") -> None:
        """Print the line a preparation command ends with, once the set is in place:
        ``TASK: wrote DIR (train N, val N, test N[ unit]; details) in S s``, ``started`` a ``time.time()``."""
        summary = ", ".join(f"{split} {self.counts[split]}" for split in SPLITS if split in self.counts)
        summary += f" {unit}" if unit else ""
        elapsed = time.time() - started
        print(f"{self.meta['task']}: wrote {self.final_dir} ({summary}; {details}) in {elapsed:.1f}s")

    def _finish(self) -> None:
        assert self.tmp_dir is not None
        empty = [split for split, arrays in self.arrays.items() if split != "val" and len(arrays.labels) == 0]
        if empty:
            raise ValueError(
                f"prepared set {self.name!r} would have no {' and no '.join(empty)} examples: "
                "its source holds none"
            )
        files: dict[str, dict[str, Any]] = {}
        stamps: dict[str, dict[str, Any]] = {}
        counts: dict[str, int] = {}
        shares: dict[str, float | None] = {}
        for split, arrays in self.arrays.items():
            counts[split] = int(arrays.labels.shape[0])
            shares[split] = majority_share(arrays.labels)
            for kind in ARRAY_KINDS:
                array = getattr(arrays, kind)
                array.flush()
                shape, dtype = list(array.shape), str(array.dtype)
                del array
                path = self.tmp_dir / f"{split}.{kind}.npy"
                stamps[path.name] = stamp = hashed_stamp(path)
                files[path.name] = {
                    "sha256": stamp["sha256"],
                    "bytes": stamp["bytes"],
                    "shape": shape,
                    "dtype": dtype,
                }
        self.arrays.clear()
        self.counts = counts
        meta = {
            **self.meta,
            "name": self.name,
            "format_version": FORMAT_VERSION,
            "counts": counts,
            "majority_share": shares,
            "files": files,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        write_meta(self.tmp_dir, meta)
        write_stamps(self.tmp_dir, stamps)
        old = None
        if self.final_dir.exists():
            old = self.root / f".{self.name}.old-{os.getpid()}"
            shutil.rmtree(old, ignore_errors=True)
            os.replace(self.final_dir, old)
        os.replace(self.tmp_dir, self.final_dir)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
