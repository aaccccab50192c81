"""Downloads (against a local HTTP server with Range support), safe extraction, and ``lra-release``."""

from __future__ import annotations

import gzip
import hashlib
import io
import socket
import tarfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

import data_prep
from data_prep.commands import main
from data_prep.download import (
    ChecksumMismatchError,
    CorruptArchiveError,
    DownloadError,
    UnsafeArchiveError,
    download,
    extract_archive,
)

PAYLOAD = bytes(range(256)) * 64  # 16 KiB
MD5 = hashlib.md5(PAYLOAD).hexdigest()
SHA256 = hashlib.sha256(PAYLOAD).hexdigest()


class Handler(BaseHTTPRequestHandler):
    """Serves ``files``; honours ``Range: bytes=N-`` unless the path is in ``ignore_range``;
    a path in ``cut_after`` announces its full length but sends only that many bytes, once."""

    files: dict[str, bytes] = {}
    ignore_range: set[str] = set()
    cut_after: dict[str, int] = {}
    log: list[tuple[str, str | None]] = []

    def do_GET(self) -> None:
        data = self.files.get(self.path)
        range_header = self.headers.get("Range")
        self.log.append((self.path, range_header))
        if data is None:
            self.send_error(404)
            return
        start = 0
        if range_header and self.path not in self.ignore_range:
            start = int(range_header.removeprefix("bytes=").split("-")[0])
            if start >= len(data):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(data)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        else:
            self.send_response(200)
        body = data[start:]
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        cut = self.cut_after.pop(self.path, None)
        self.wfile.write(body if cut is None else body[:cut])
        self.close_connection = cut is not None

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def server():
    Handler.files, Handler.ignore_range, Handler.cut_after, Handler.log = {"/f.bin": PAYLOAD}, set(), {}, []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_download_verifies_and_renames(server, tmp_path):
    dest = download(f"{server}/f.bin", tmp_path / "sub" / "f.bin", md5=MD5, sha256=SHA256)
    assert dest.read_bytes() == PAYLOAD and not (tmp_path / "sub" / "f.bin.part").exists()
    assert Handler.log == [("/f.bin", None)]
    assert download(f"{server}/f.bin", dest, md5=MD5) == dest and len(Handler.log) == 1  # no second request


def test_resumes_from_a_part_file_with_a_range_request(server, tmp_path):
    (tmp_path / "f.bin.part").write_bytes(PAYLOAD[:1000])
    download(f"{server}/f.bin", tmp_path / "f.bin", sha256=SHA256)
    assert Handler.log == [("/f.bin", "bytes=1000-")]
    assert (tmp_path / "f.bin").read_bytes() == PAYLOAD


def test_an_interrupted_download_resumes_on_rerun(server, tmp_path):
    Handler.cut_after["/f.bin"] = 3000
    with pytest.raises(DownloadError, match="stopped at 3000 of 16384 bytes; rerun to resume"):
        download(f"{server}/f.bin", tmp_path / "f.bin", md5=MD5)
    assert (tmp_path / "f.bin.part").stat().st_size == 3000 and not (tmp_path / "f.bin").exists()
    download(f"{server}/f.bin", tmp_path / "f.bin", md5=MD5)
    assert Handler.log[-1] == ("/f.bin", "bytes=3000-")
    assert (tmp_path / "f.bin").read_bytes() == PAYLOAD


def test_a_server_that_ignores_range_restarts_the_file(server, tmp_path):
    Handler.ignore_range.add("/f.bin")
    (tmp_path / "f.bin.part").write_bytes(b"stale" * 100)
    download(f"{server}/f.bin", tmp_path / "f.bin", md5=MD5)
    assert (tmp_path / "f.bin").read_bytes() == PAYLOAD


def test_a_complete_part_file_gets_416_and_is_accepted(server, tmp_path):
    (tmp_path / "f.bin.part").write_bytes(PAYLOAD)
    download(f"{server}/f.bin", tmp_path / "f.bin", md5=MD5)
    assert Handler.log == [("/f.bin", f"bytes={len(PAYLOAD)}-")]
    assert (tmp_path / "f.bin").read_bytes() == PAYLOAD


def test_checksum_mismatch_raises_with_both_digests_and_deletes_nothing(server, tmp_path):
    wrong = "0" * 32
    with pytest.raises(ChecksumMismatchError) as error:
        download(f"{server}/f.bin", tmp_path / "f.bin", md5=wrong)
    assert MD5 in str(error.value) and wrong in str(error.value)
    assert (tmp_path / "f.bin.part").read_bytes() == PAYLOAD and not (tmp_path / "f.bin").exists()
    (tmp_path / "g.bin").write_bytes(b"not it")
    with pytest.raises(ChecksumMismatchError):
        download(f"{server}/f.bin", tmp_path / "g.bin", md5=MD5)
    assert (tmp_path / "g.bin").read_bytes() == b"not it"


def test_without_a_published_checksum_the_sha256_is_recorded_and_checked_later(server, tmp_path):
    dest = download(f"{server}/f.bin", tmp_path / "f.bin")
    assert (tmp_path / "f.bin.sha256").read_text() == f"{SHA256}  f.bin\n"
    dest.write_bytes(PAYLOAD[:-1] + b"X")
    with pytest.raises(ChecksumMismatchError, match=SHA256):
        download(f"{server}/f.bin", dest)


def test_http_and_network_errors_are_download_errors(server, tmp_path):
    with pytest.raises(DownloadError, match="HTTP 404"):
        download(f"{server}/missing.bin", tmp_path / "m.bin")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    with pytest.raises(DownloadError, match="could not reach"):
        download(f"http://127.0.0.1:{closed_port}/f.bin", tmp_path / "m.bin", timeout=5)


# ---------------------------------------------------------------- extraction


def make_tar(path: Path, members: dict[str, bytes], links: dict[str, str] | None = None) -> Path:
    mode = "w:gz" if path.name.endswith("gz") else "w"
    with tarfile.open(path, mode) as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
    return path


def test_extracts_selected_regular_files_and_skips_links(tmp_path):
    members = {"top/a.txt": b"a", "top/deep/b.txt": b"bb", "top/c.bin": b"ccc"}
    archive = make_tar(tmp_path / "x.tar.gz", members, links={"top/link": "/etc/passwd"})
    assert extract_archive(archive, tmp_path / "out") == 3
    for name, data in members.items():
        assert (tmp_path / "out" / name).read_bytes() == data
    assert not (tmp_path / "out" / "top" / "link").exists()
    plain = make_tar(tmp_path / "y.tar", members)
    assert (
        extract_archive(plain, tmp_path / "picked", select=lambda name: name.endswith(".txt"), stop_after=1)
        == 1
    )
    assert [p.name for p in (tmp_path / "picked" / "top").iterdir()] == ["a.txt"]


@pytest.mark.parametrize("name", ["../evil.txt", "top/../../evil.txt", "/tmp/evil-absolute.txt"])
def test_members_escaping_the_destination_are_refused(tmp_path, name):
    archive = make_tar(tmp_path / "bad.tar.gz", {"ok.txt": b"fine", name: b"evil"})
    with pytest.raises(UnsafeArchiveError, match="outside"):
        extract_archive(archive, tmp_path / "out")
    assert not (tmp_path / "evil.txt").exists() and not Path("/tmp/evil-absolute.txt").exists()


def test_a_member_written_through_an_existing_link_out_of_dest_is_refused(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "out" / "link").symlink_to(tmp_path / "elsewhere")
    archive = make_tar(tmp_path / "x.tar", {"link/file.txt": b"evil"})
    with pytest.raises(UnsafeArchiveError, match="resolves outside"):
        extract_archive(archive, tmp_path / "out")
    assert list((tmp_path / "elsewhere").iterdir()) == []


def test_corrupt_or_truncated_archives_are_detected(tmp_path):
    members = {f"d/{i}.bin": hashlib.sha256(str(i).encode()).digest() * 200 for i in range(20)}
    good = make_tar(tmp_path / "good.tar.gz", members).read_bytes()
    # Flip one byte of the last 8 (the gzip trailer's CRC-32): only the final check can notice.
    flipped = bytearray(good)
    flipped[-6] ^= 0xFF
    (tmp_path / "crc.tar.gz").write_bytes(bytes(flipped))
    (tmp_path / "short.tar.gz").write_bytes(good[: len(good) // 2])
    for name in ("crc.tar.gz", "short.tar.gz"):
        with pytest.raises(CorruptArchiveError, match="corrupt or truncated"):
            extract_archive(tmp_path / name, tmp_path / name.replace(".tar.gz", ""))
    (tmp_path / "not.tar.gz").write_bytes(gzip.compress(b"plain text, not a tar archive"))
    with pytest.raises(CorruptArchiveError):
        extract_archive(tmp_path / "not.tar.gz", tmp_path / "not")


# ---------------------------------------------------------------- lra-release


def release_archive(tmp_path: Path) -> bytes:
    rows = "".join(f"{i % 2}\tA{i}\tB{i}\ttext {i}\tother {i}\n" for i in range(4))
    members = {
        f"lra_release/lra_release/tsv_data/new_aan_pairs.{name}.tsv": rows.encode()
        for name in ("train", "eval", "test")
    }
    members["lra_release/lra_release/listops-1000/basic_test.tsv"] = (
        b"Source\tTarget\r\n( [MIN 1 2 ] )\t1\r\n"
    )
    return make_tar(tmp_path / "release.tar.gz", members).read_bytes()


def test_lra_release_downloads_records_sha256_unpacks_once(server, tmp_path, capsys):
    archive = release_archive(tmp_path)
    Handler.files["/lra_release.gz"] = archive
    dest = tmp_path / "dest"
    argv = ["lra-release", "--root", str(tmp_path / "data"), "--download", "--dest", str(dest)]
    argv += ["--url", f"{server}/lra_release.gz"]
    assert main(argv) == 0
    assert "unpacked 4 files" in capsys.readouterr().out
    digest = hashlib.sha256(archive).hexdigest()
    assert (dest / "downloads" / "lra_release.gz.sha256").read_text().split()[0] == digest
    assert (dest / "lra_release" / ".unpacked-from").read_text().strip() == digest
    assert main(argv) == 0
    assert "already unpacked" in capsys.readouterr().out and len(Handler.log) == 1
    retrieval = ["retrieval", "--root", str(tmp_path / "data"), "--source", str(dest / "lra_release")]
    assert main(retrieval) == 0
    assert data_prep.load("retrieval", "train", root=tmp_path / "data").labels.tolist() == [0, 1, 0, 1]


def test_lra_release_refuses_an_unsafe_archive(tmp_path, capsys):
    archive = make_tar(tmp_path / "lra_release.gz", {"lra_release/ok.txt": b"ok", "../../escape.txt": b"x"})
    assert main(["lra-release", "--root", str(tmp_path / "data"), "--archive", str(archive)]) == 1
    assert "would be written outside" in capsys.readouterr().err
    assert not (tmp_path / "escape.txt").exists() and not (tmp_path.parent / "escape.txt").exists()
