"""The LRA release archive (ListOps-1000, AAN ``tsv_data``, Pathfinder): fetch and unpack it safely.

    python -m data_prep lra-release --download [--dest DIR]     # DIR defaults to the data root
    python -m data_prep lra-release --archive lra_release.gz     # one fetched by other means (gsutil)

The archive is downloaded to ``DIR/downloads/lra_release.gz``, resumably (rerun after an
interruption). Google publishes no checksum for it, so none is invented: the SHA-256 of the
completed download is recorded beside it (``lra_release.gz.sha256``) and checked on later runs,
and the archive's own integrity (gzip CRC-32 and length, tar headers) is verified while it is
unpacked. Unpacking writes only regular files and folders that stay inside ``DIR``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from data_prep.commands import command
from data_prep.download import download, extract_archive, sidecar
from data_prep.storage import file_digest

URL = "https://storage.googleapis.com/long-range-arena/lra_release.gz"
MARKER = ".unpacked-from"  # written into DIR/lra_release once unpacking finished: the archive's SHA-256


def run_release(args: argparse.Namespace) -> None:
    started = time.time()
    dest = Path(args.dest or args.root)
    if args.download:
        archive = download(args.url, dest / "downloads" / "lra_release.gz")
    else:
        archive = args.archive
        if not archive.is_file():
            raise FileNotFoundError(
                f"{archive} does not exist; fetch it with: python -m data_prep lra-release --download"
            )
    recorded = sidecar(archive)
    digest = recorded.read_text().split()[0] if recorded.is_file() else file_digest(archive, "sha256")
    marker = dest / "lra_release" / MARKER
    if marker.is_file() and marker.read_text().strip() == digest:
        print(f"lra-release: {dest / 'lra_release'} is already unpacked from {archive} (sha256 {digest})")
        return
    count = extract_archive(archive, dest)
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(digest + "\n")
    print(
        f"lra-release: unpacked {count} files from {archive} (sha256 {digest}) into {dest} in "
        f"{time.time() - started:.0f}s; next: python -m data_prep retrieval --source {dest / 'lra_release'} "
        f"(likewise listops, pathfinder)"
    )


@command(
    "lra-release",
    help="fetch (resumable) and safely unpack LRA's lra_release.gz; no checksum is published for it, so "
    "the SHA-256 of the download is recorded beside it and the archive's gzip/tar integrity is checked "
    "on unpacking",
)
def configure(parser: argparse.ArgumentParser):
    origin = parser.add_mutually_exclusive_group(required=True)
    origin.add_argument("--download", action="store_true", help=f"fetch {URL} into DEST/downloads")
    origin.add_argument("--archive", type=Path, help="unpack an lra_release.gz fetched by other means")
    parser.add_argument("--dest", type=Path, default=None, help="where to unpack (default: the data root)")
    parser.add_argument(
        "--url", default=URL, help="where to fetch the archive from (default: Google Storage)"
    )
    return run_release
