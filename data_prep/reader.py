"""Reading a prepared set: its meta.json read once, each split's arrays checked once, memory-mapped.

    prepared = PreparedSet("listops-generated", root)      # DataNotPreparedError if absent
    train = prepared.split("train")                          # CorruptDataError if damaged
    tokens, length, label = train[0]                         # what the harness trains on

Items are numpy int64: tokens (seq_len,) or, for retrieval, (2, seq_len); length () or (2,), the
number of real tokens; label (). A DataLoader's default collation turns a batch of them into
``(tokens (B, L) or (B, 2, L), lengths (B,) or (B, 2), labels (B,))`` int64 tensors.
"""

from __future__ import annotations

import contextlib
import json
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from data_prep.recipes import how_to_prepare
from data_prep.storage import (
    ARRAY_KINDS,
    META_FILE,
    SPLITS,
    STAMPS_FILE,
    CorruptDataError,
    DataNotPreparedError,
    default_root,
    hashed_stamp,
    majority_share,
    write_meta,
    write_stamps,
)


class PreparedSet:
    """The prepared set ``name`` under ``root`` (default: ``$LRA_DATA`` or ./data).

    ``meta`` is its meta.json, read once here. ``split(name)`` opens a split; with ``verify`` (the
    default) its arrays are checked against meta.json the first time (``check_files``), so a
    truncated or altered array is never trained on.
    """

    def __init__(self, name: str, root: Path | str | None = None, *, verify: bool = True) -> None:
        self.name = name
        self.root = Path(root) if root is not None else default_root()
        self.directory = self.root / name
        self.verify = verify
        self._verified: set[str] = set()
        meta_file = self.directory / META_FILE
        if not meta_file.is_file():
            raise DataNotPreparedError(
                f"no prepared data set {name!r} under {self.root.resolve()} (looked for {meta_file}). "
                f"Prepare it with: {how_to_prepare(name, self.root)}"
            )
        try:
            self.meta: dict[str, Any] = json.loads(meta_file.read_text())
        except ValueError as error:
            raise CorruptDataError(f"{meta_file} is not valid JSON ({error}). {self.rebuild_hint}") from None

    @property
    def rebuild_hint(self) -> str:
        """``Rebuild with: <command>``: the command recorded in meta.json, else the recipe's."""
        recorded = getattr(self, "meta", {}).get("command")
        return f"Rebuild with: {recorded or how_to_prepare(self.name, self.root)}"

    @property
    def seq_len(self) -> int:
        return self.meta["seq_len"]

    @property
    def vocab_size(self) -> int:
        return self.meta["vocab_size"]

    @property
    def num_classes(self) -> int:
        return self.meta["num_classes"]

    @property
    def counts(self) -> dict[str, int]:
        return self.meta["counts"]

    @property
    def majority_share(self) -> dict[str, float | None]:
        """Each split's share of its most frequent label (``data_prep.storage.majority_share``), as
        meta.json records it. A set written before meta.json recorded it has it computed here once and
        written back into its meta.json (atomically; a read-only folder keeps it in memory only)."""
        if "majority_share" not in self.meta:
            shares = {split: majority_share(self.labels(split)) for split in self.counts}
            self.meta["majority_share"] = shares
            with contextlib.suppress(OSError):  # a read-only set: computed again at its next load
                write_meta(self.directory, self.meta)
        return self.meta["majority_share"]

    def labels(self, split: str) -> np.ndarray:
        """The labels (N,) of ``split``, memory-mapped, unverified; ``CorruptDataError`` if unreadable."""
        path = self.directory / f"{split}.labels.npy"
        try:
            return np.load(path, mmap_mode="r")
        except (OSError, ValueError) as error:
            raise CorruptDataError(f"{path} cannot be read ({error}). {self.rebuild_hint}") from None

    @cached_property
    def dual(self) -> bool:
        """Whether an example holds two documents (retrieval): tokens (N, 2, seq_len)."""
        return len(self.meta["files"]["train.tokens.npy"]["shape"]) == 3

    def split(self, split: str) -> PreparedSplit:
        """Split ``split`` (train, val or test), verified on its first opening."""
        if split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
        if split not in self.counts:
            raise CorruptDataError(
                f"prepared set {self.name!r} has no {split!r} split (has {sorted(self.counts)}). "
                f"{self.rebuild_hint}"
            )
        if self.verify and split not in self._verified:
            self.check_files(split)
            self._verified.add(split)
        return PreparedSplit(self, split)

    @cached_property
    def stamps(self) -> dict[str, dict[str, Any]]:
        """stamps.json: each array's ``{bytes, mtime_ns, sha256}`` when its SHA-256 was last checked;
        empty for a set written before stamps were recorded, or whose stamps.json is unreadable."""
        try:
            stamps = json.loads((self.directory / STAMPS_FILE).read_text())
        except (OSError, ValueError):
            return {}
        return stamps if isinstance(stamps, dict) else {}

    def check_files(self, split: str, *, full: bool = False) -> None:
        """Each array of ``split`` against meta.json; ``CorruptDataError`` names the first bad one.

        Its size is always compared. Its SHA-256 is computed only when ``full`` or when its stamp in
        stamps.json (size, mtime_ns and the SHA-256 meta.json expects) no longer matches the file; a
        file that hashes right is stamped again (atomically; a read-only folder is hashed at every
        check). So a truncated file, or one rewritten since it was stamped, is caught without reading
        every byte at each job start. The blind spot: a file rewritten with the same size whose
        mtime_ns ends up as stamped (set back with ``os.utime``, or rewritten within the file
        system's timestamp granularity of its stamping) is trusted; ``python -m data_prep verify``
        (``full``) hashes everything.
        """
        restamped: dict[str, dict[str, Any]] = {}
        for kind in ARRAY_KINDS:
            file_name = f"{split}.{kind}.npy"
            expected = self.meta["files"].get(file_name)
            path = self.directory / file_name
            problem = None
            if expected is None:
                problem = "is not listed in meta.json"
            elif not path.is_file():
                problem = "is missing"
            elif (size := path.stat().st_size) != expected["bytes"]:
                problem = f"has {size} bytes, expected {expected['bytes']} (truncated?)"
            elif full or not self.stamp_holds(path, expected["sha256"]):
                stamp = hashed_stamp(path)
                if stamp["sha256"] == expected["sha256"]:
                    restamped[file_name] = stamp
                else:
                    problem = "does not match its recorded SHA-256 (corrupted or modified)"
            if problem:
                raise CorruptDataError(f"{path} {problem}. {self.rebuild_hint}")
        if restamped:
            self.stamps.update(restamped)
            with contextlib.suppress(OSError):  # a read-only set: hashed again at its next check
                write_stamps(self.directory, self.stamps)

    def stamp_holds(self, path: Path, sha256: str) -> bool:
        """Whether ``path``'s size and mtime_ns are those stamped when it last hashed to ``sha256``."""
        status = path.stat()
        return self.stamps.get(path.name) == {
            "bytes": status.st_size,
            "mtime_ns": status.st_mtime_ns,
            "sha256": sha256,
        }

    def __repr__(self) -> str:
        return f"PreparedSet({self.name!r}, root={str(self.root)!r})"


class PreparedSplit:
    """One split of a prepared set: memory-mapped ``tokens``, ``lengths``, ``labels``; items as in the
    module docstring. Indexing reads only the rows asked for. It pickles as its location and reopens
    the memory maps where it lands (a DataLoader worker never receives a copy of the arrays)."""

    def __init__(self, prepared: PreparedSet, split: str) -> None:
        self.prepared = prepared
        self.split = split
        directory = prepared.directory
        self.tokens = np.load(directory / f"{split}.tokens.npy", mmap_mode="r")
        self.lengths = np.load(directory / f"{split}.lengths.npy", mmap_mode="r")
        self.labels = np.load(directory / f"{split}.labels.npy", mmap_mode="r")
        if not (len(self.tokens) == len(self.lengths) == len(self.labels) == prepared.counts[split]):
            raise CorruptDataError(
                f"{directory}: {split} arrays disagree in length with meta.json. {prepared.rebuild_hint}"
            )

    @property
    def meta(self) -> dict[str, Any]:
        return self.prepared.meta

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int) -> tuple[np.ndarray, np.ndarray, np.int64]:
        return (
            self.tokens[index].astype(np.int64),
            np.asarray(self.lengths[index], dtype=np.int64),
            np.int64(self.labels[index]),
        )

    def __reduce__(self):
        return reopen_split, (self.prepared.name, self.prepared.root, self.split)

    def __repr__(self) -> str:
        return f"PreparedSplit({self.prepared.name!r}, {self.split!r}, n={len(self)})"


def reopen_split(name: str, root: Path, split: str) -> PreparedSplit:
    """A split of a set that was verified where it was first opened (unpickling in a worker)."""
    return PreparedSet(name, root, verify=False).split(split)


def load(name: str, split: str, root: Path | str | None = None) -> PreparedSplit:
    """``PreparedSet(name, root).split(split)``: one split of a prepared set, verified."""
    return PreparedSet(name, root).split(split)
