"""Retrieval: AAN TSV pairs (exact LRA format) from folders at any release level and from lra_release.gz."""

from __future__ import annotations

import tarfile
from pathlib import Path

import numpy as np
import pytest

import data_prep
from data_prep.commands import main
from data_prep.retrieval import read_pairs

# label, id1, id2, text1, text2: quotes are plain text, labels as LRA writes them.
ROWS = {
    "train": [
        ("1.0", "P00-1001", "W99-0613", "He said \"hello\" to the 'parser'", '"Quoted at the start'),
        ("0", "A88-1019", "J93-2004", "Résumé of a café", "short"),
    ],
    "eval": [("0.0", "C04-1010", "N03-1033", "x" * 30, 'a "b" c')],
    "test": [("1", "E06-1002", "P05-1022", "tab-free text", "")],
}


def write_aan(folder: Path, rows: dict = ROWS) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, split_rows in rows.items():
        lines = "".join("\t".join(row) + "\n" for row in split_rows)
        (folder / f"new_aan_pairs.{name}.tsv").write_bytes(lines.encode())


def load_all(root: Path) -> dict:
    return {split: data_prep.load("retrieval", split, root=root) for split in ("train", "val", "test")}


def decode(tokens: np.ndarray, length: int) -> str:
    return bytes((np.asarray(tokens[:length]) - 1).astype(np.uint8)).decode()


@pytest.mark.parametrize(
    "level", ["", "lra_release", "lra_release/lra_release", "lra_release/lra_release/tsv_data"]
)
def test_two_byte_documents_per_example_from_any_release_level(tmp_path, level):
    write_aan(tmp_path / "lra_release" / "lra_release" / "tsv_data")
    assert main(["retrieval", "--root", str(tmp_path / "data"), "--source", str(tmp_path / level)]) == 0
    splits = load_all(tmp_path / "data")
    train = splits["train"]
    assert train.tokens.shape == (2, 2, 4000) and train.lengths.shape == (2, 2)
    assert train.labels.tolist() == [1, 0] and splits["val"].labels.tolist() == [0]
    assert splits["test"].labels.tolist() == [1]
    for i, row in enumerate(ROWS["train"]):
        for side in range(2):
            text = row[3 + side]
            assert train.lengths[i, side] == len(text.encode())
            assert decode(train.tokens[i, side], train.lengths[i, side]) == text
    assert splits["test"].lengths.tolist() == [[13, 0]]
    assert train.meta["vocab_size"] == 257 and train.meta["num_classes"] == 2


def test_truncation_is_per_document_and_counted(tmp_path):
    write_aan(tmp_path / "tsv_data")
    assert main(["retrieval", "--root", str(tmp_path), "--source", str(tmp_path), "--seq-len", "8"]) == 0
    val = data_prep.load("retrieval", "val", root=tmp_path)
    assert val.tokens.shape == (1, 2, 8) and val.lengths.tolist() == [[8, 7]]
    assert decode(val.tokens[0, 1], 7) == 'a "b" c'
    assert val.meta["truncated_documents"] == {"train": 3, "val": 1, "test": 1}


def test_reads_only_the_pair_files_out_of_the_release_archive(tmp_path):
    staged = tmp_path / "staged"
    write_aan(staged / "lra_release" / "lra_release" / "tsv_data")
    (staged / "lra_release" / "lra_release" / "listops-1000").mkdir()
    (staged / "lra_release" / "lra_release" / "listops-1000" / "basic_test.tsv").write_text(
        "Source\tTarget\n"
    )
    archive = tmp_path / "lra_release.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(staged / "lra_release", arcname="lra_release")
    data = tmp_path / "data"
    assert main(["retrieval", "--root", str(data), "--source", str(archive), "--seq-len", "64"]) == 0
    assert load_all(data)["train"].labels.tolist() == [1, 0]
    assert [p.name for p in data.iterdir()] == ["retrieval"]  # the unpacked pair files are gone


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            b"1\tA\tB\tonly four fields\n",
            ":2: expected 5 tab-separated fields (label, id1, id2, text1, text2), found 4",
        ),
        (b"2\tA\tB\tt1\tt2\n", ":2: label b'2' is not one of 0, 1, 0.0, 1.0"),
    ],
)
def test_malformed_lines_name_file_and_line(tmp_path, line, message):
    path = tmp_path / "new_aan_pairs.train.tsv"
    path.write_bytes(b"0\tA\tB\tgood\tline\n" + line)
    with pytest.raises(ValueError) as error:
        list(read_pairs(path))
    assert str(error.value) == f"{path}{message}"


def test_blank_lines_are_skipped_and_errors_write_nothing(tmp_path, capsys):
    rows = dict(ROWS)
    write_aan(tmp_path / "tsv_data", rows)
    path = tmp_path / "tsv_data" / "new_aan_pairs.test.tsv"
    path.write_bytes(b"\n1\tA\tB\tone\ttwo\r\n\n")
    data = tmp_path / "data"
    assert main(["retrieval", "--root", str(data), "--source", str(tmp_path)]) == 0
    assert data_prep.load("retrieval", "test", root=data).lengths.tolist() == [[3, 3]]
    path.write_bytes(b"1\tA\tB\tone\n")
    assert main(["retrieval", "--root", str(data), "--name", "broken", "--source", str(tmp_path)]) == 1
    assert f"{path}:1: expected 5 tab-separated fields" in capsys.readouterr().err
    assert sorted(p.name for p in data.iterdir()) == ["retrieval"]
