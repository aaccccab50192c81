"""``python -m data_prep verify [NAME ...]``: the full check of prepared sets.

Every array of every split is hashed and compared with the size and SHA-256 in its set's meta.json,
whatever its stamp says, and the stamps that a job start trusts instead of hashing
(``PreparedSet.check_files``) are refreshed. Without names it checks every set under the data root.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from data_prep.commands import command
from data_prep.reader import PreparedSet
from data_prep.storage import META_FILE, CorruptDataError, DataNotPreparedError


def prepared_names(root: Path) -> list[str]:
    """The prepared sets under ``root``: its folders holding a meta.json (hidden, partial ones left out)."""
    if not root.is_dir():
        return []
    return sorted(
        path.name for path in root.iterdir() if not path.name.startswith(".") and (path / META_FILE).is_file()
    )


def verify_set(prepared: PreparedSet) -> int:
    """Hash every array of ``prepared`` (``CorruptDataError`` at the first bad one); returns their bytes."""
    for split in prepared.counts:
        prepared.check_files(split, full=True)
    return sum(entry["bytes"] for entry in prepared.meta["files"].values())


def run_verify(args: argparse.Namespace) -> None:
    names = args.names or prepared_names(args.root)
    if not names:
        raise DataNotPreparedError(f"no prepared data sets under {args.root.resolve()}")
    failed = []
    for name in names:
        try:
            size = verify_set(PreparedSet(name, args.root))
        except (CorruptDataError, DataNotPreparedError) as error:
            print(f"verify: {name}: {error}", file=sys.stderr)
            failed.append(name)
        else:
            print(f"verify: {name}: ok ({size / 2**20:.1f} MiB hashed, stamps refreshed)")
    if failed:
        raise CorruptDataError(f"{len(failed)} of {len(names)} prepared sets failed: {', '.join(failed)}")


@command("verify", help="hash every array of prepared sets against meta.json and refresh their stamps")
def configure(parser: argparse.ArgumentParser):
    parser.add_argument(
        "names", nargs="*", metavar="NAME", help="prepared sets to check (default: every set under --root)"
    )
    return run_verify
