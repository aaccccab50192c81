"""ListOps: the generator (checked by an independent evaluator) and the TSV readers."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import numpy as np
import pytest

import data_prep
from data_prep.commands import main
from data_prep.listops.prepare import read_tsv

# The vocabulary as the task defines it, written out here rather than imported.
VOCAB = ["<pad>", "[MIN", "[MAX", "[MED", "[SM", "]"] + [str(digit) for digit in range(10)]
SHORT = ["--min-length", "20", "--max-length", "200", "--max-depth", "4", "--max-args", "6"]
SIZES = ["--num-train", "300", "--num-val", "60", "--num-test", "60"]


def evaluate(ids: list[int]) -> tuple[int, int, int]:
    """(value, depth, widest operator) of a prefix-order token-id row, by recursive descent."""
    words = [VOCAB[i] for i in ids]
    position = 0

    def node(depth: int) -> tuple[int, int, int]:
        nonlocal position
        word = words[position]
        position += 1
        if word.isdigit():
            return int(word), depth, 0
        values, deepest, widest = [], depth, 0
        while words[position] != "]":
            value, sub_depth, sub_width = node(depth + 1)
            values.append(value)
            deepest, widest = max(deepest, sub_depth), max(widest, sub_width)
        position += 1
        ordered = sorted(values)
        half = len(ordered) // 2
        median = ordered[half] if len(ordered) % 2 else (ordered[half - 1] + ordered[half]) // 2
        value = {"[MIN": min(values), "[MAX": max(values), "[MED": median, "[SM": sum(values) % 10}[word]
        return value, deepest, max(widest, len(values))

    result = node(1)
    assert position == len(words), "tokens left over after the root's closing bracket"
    return result


def generate(root: Path, *extra: str, name: str = "listops-demo") -> dict:
    assert main(["listops", "--root", str(root), "--name", name, *SHORT, *SIZES, *extra]) == 0
    return {split: data_prep.load(name, split, root=root) for split in ("train", "val", "test")}


def rows(split) -> list[bytes]:
    return [np.asarray(split.tokens[i, : split.lengths[i]]).tobytes() for i in range(len(split))]


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("listops")
    return root, generate(root)


def test_generated_labels_match_an_independent_evaluator(demo):
    _, splits = demo
    for split in splits.values():
        for i in range(len(split)):
            n = int(split.lengths[i])
            assert 20 < n < 200
            assert np.all(split.tokens[i, n:] == 0) and np.all(split.tokens[i, :n] > 0)
            value, depth, widest = evaluate(split.tokens[i, :n].tolist())
            assert value == split.labels[i]
            assert depth <= 4 and 2 <= widest <= 6


def test_generated_splits_are_disjoint_and_sized(demo):
    _, splits = demo
    assert [len(s) for s in splits.values()] == [300, 60, 60]
    all_rows = [row for split in splits.values() for row in rows(split)]
    assert len(set(all_rows)) == len(all_rows)
    labels = np.concatenate([np.asarray(s.labels) for s in splits.values()])
    assert set(np.unique(labels)) <= set(range(10)) and len(np.unique(labels)) >= 8


def test_meta_records_vocab_seed_and_a_command_that_rebuilds_the_set(demo, tmp_path):
    root, splits = demo
    meta = splits["train"].meta
    assert meta["vocab"] == VOCAB and meta["vocab_size"] == 16 and meta["num_classes"] == 10
    assert meta["seed"] == 0 and meta["seq_len"] == 200 and meta["source"] == "generator"
    argv = shlex.split(meta["command"])[3:]
    argv[argv.index("--root") + 1] = str(tmp_path)
    assert main(argv) == 0
    rebuilt = json.loads((tmp_path / "listops-demo" / "meta.json").read_text())
    assert {k: v["sha256"] for k, v in rebuilt["files"].items()} == {
        k: v["sha256"] for k, v in meta["files"].items()
    }


def test_same_seed_same_arrays_other_seed_other_arrays(demo, tmp_path):
    _, first = demo
    again = generate(tmp_path / "a")
    other = generate(tmp_path / "b", "--seed", "1")
    for split in first:
        assert np.array_equal(first[split].tokens, again[split].tokens)
        assert np.array_equal(first[split].labels, again[split].labels)
    assert not set(rows(first["train"])) & set(rows(other["train"]))


def test_seq_len_truncates_and_counts(demo, tmp_path):
    full = demo[1]["train"]
    train = generate(tmp_path, "--seq-len", "40")["train"]
    assert train.tokens.shape == (300, 40)
    assert np.array_equal(train.tokens, full.tokens[:, :40])
    assert np.array_equal(train.lengths, np.minimum(full.lengths, 40))
    assert train.meta["truncated"]["train"] == int(np.sum(full.lengths > 40)) > 0


def test_impossible_request_stops_with_a_clear_error(tmp_path, capsys):
    # Trees of exactly 4 tokens ([OP d d ]) have only 4 * 10 * 10 distinct forms.
    argv = ["listops", "--root", str(tmp_path), "--min-length", "3", "--max-length", "5", "--max-depth", "2"]
    assert main([*argv, "--num-train", "500", "--num-val", "0", "--num-test", "0"]) == 1
    assert "found only 400 distinct trees" in capsys.readouterr().err
    assert not (tmp_path / "listops").exists()


def test_reads_the_2018_file_into_the_named_split(tmp_path, listops_2018_file):
    source = ["--source", str(listops_2018_file), "--split", "test"]
    assert main(["listops", "--root", str(tmp_path), *source]) == 0
    test = data_prep.load("listops", "test", root=tmp_path)
    lines = listops_2018_file.read_text().splitlines()[1:]
    assert len(test) == len(lines) == 40
    assert test.labels.tolist() == [int(line.split("\t")[0]) for line in lines]
    assert list(test.meta["counts"]) == ["test"]
    for i in range(len(test)):
        ids = test.tokens[i, : test.lengths[i]].tolist()
        words = [w for w in lines[i].split("\t")[1].split() if w not in "()"]
        assert [VOCAB[t] for t in ids] == words
        # Real data settles the median of an even count: the mean of the middle two, truncated.
        assert evaluate(ids)[0] == test.labels[i]


def write_lra_tsv(path: Path, rows: list[tuple[str, int]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "Source\tTarget\r\n" + "".join(f"{source}\t{label}\r\n" for source, label in rows)
    path.write_bytes(text.encode())


def test_reads_lra_files_from_any_release_level_with_crlf(tmp_path):
    folder = tmp_path / "lra_release" / "lra_release" / "listops-1000"
    examples = {
        "train": [("( ( ( [MAX 2 ) 9 ) ] )", 9), ("( ( ( ( [MED 3 ) 4 ) 8 ) ] )", 4)],
        "val": [("( ( ( [SM 7 ) 5 ) ] )", 2)],
        "test": [("( ( ( [MED 3 ) 4 ) ] )", 3)],
    }
    for split, split_rows in examples.items():
        write_lra_tsv(folder / f"basic_{split}.tsv", split_rows)
    assert (
        main(["listops", "--root", str(tmp_path / "data"), "--source", str(tmp_path), "--seq-len", "6"]) == 0
    )
    train = data_prep.load("listops", "train", root=tmp_path / "data")
    assert train.tokens.shape == (2, 6)
    assert [VOCAB[t] for t in train.tokens[0]] == ["[MAX", "2", "9", "]", "<pad>", "<pad>"]
    assert train.lengths.tolist() == [4, 5] and train.labels.tolist() == [9, 4]
    assert data_prep.load("listops", "test", root=tmp_path / "data").labels.tolist() == [3]
    assert train.meta["truncated"] == {"train": 0, "val": 0, "test": 0}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("Source\tTarget\r\n( [MIN 1 2 ] )\t1\r\n( [AVG 1 2 ] )\t1\r\n", ":3: unknown ListOps token '[AVG'"),
        ("Source\tTarget\n( [MIN 1 2 ] )\t1\textra\n", ":2: expected 2 tab-separated fields, found 3"),
        ("Source\tTarget\n( [MIN 1 2 ] )\t12\n", ":2: label '12' is not a digit 0-9"),
        ("Input\tOutput\n", ":1: header ('Input', 'Output') is not a ListOps header"),
    ],
)
def test_malformed_files_name_file_and_line(tmp_path, content, message):
    path = tmp_path / "bad.tsv"
    path.write_bytes(content.encode())
    with pytest.raises(ValueError) as error:
        list(read_tsv(path))
    assert str(error.value).startswith(str(path)) and message in str(error.value)


def test_command_line_errors_exit_1_and_write_nothing(tmp_path, capsys):
    bad = tmp_path / "bad.tsv"
    bad.write_text("Source\tTarget\n( [MIN 1 x ] )\t1\n")
    assert main(["listops", "--root", str(tmp_path), "--source", str(bad), "--split", "train"]) == 1
    assert f"{bad}:2: unknown ListOps token 'x'" in capsys.readouterr().err
    assert main(["listops", "--root", str(tmp_path), "--source", str(bad)]) == 1
    assert "give one --split" in capsys.readouterr().err
    assert main(["listops", "--root", str(tmp_path), "--source", str(tmp_path)]) == 1
    assert "found no basic_train.tsv" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.tsv"]


def test_tsv_files_with_only_their_header_stop_with_the_file_and_write_nothing(tmp_path, capsys):
    folder = tmp_path / "listops-1000"
    folder.mkdir()
    for split in ("train", "val", "test"):
        (folder / f"basic_{split}.tsv").write_text("Source\tTarget\r\n")
    root = tmp_path / "data"
    assert main(["listops", "--root", str(root), "--source", str(folder)]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert (
        lines[-1]
        == f"data_prep listops: error: {folder / 'basic_train.tsv'} holds no examples after its header"
    )
    assert not root.exists() or list(root.iterdir()) == []
