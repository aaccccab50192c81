"""``debug=fdr`` without the task's data: a small set of its own, named and labelled as what it is."""

from __future__ import annotations

import json
import logging

import pytest
from conftest import compose_config, write_random_set
from helpers.python_m_lra import python_m_lra

from data_prep import DataNotPreparedError, PreparedSet, resolve
from data_prep.recipes import note_new_root
from data_prep.small_sets import STAND_IN_SOURCE, SetShape, ensure_small, resolve_small, small_set_line
from lra.report.runs import GENERATED, STAND_IN, data_labels

LOG = logging.getLogger("test_small_sets")


def test_fdr_asks_for_a_small_set_and_a_plain_run_does_not():
    assert compose_config(["debug=fdr"]).debug_data_size == 512
    assert compose_config([]).debug_data_size is None


def test_a_task_that_needs_a_download_gets_a_random_stand_in(tmp_path, caplog):
    shape = SetShape(seq_len=24, vocab_size=257, num_classes=2, dual=True)
    with caplog.at_level(logging.INFO):
        name = ensure_small("retrieval", tmp_path / "new-root", 16, shape, LOG)
    assert name == "retrieval-debug16-random"
    assert "data root" in caplog.text and "does not exist: creating it" in caplog.text
    prepared = PreparedSet(name, tmp_path / "new-root")
    assert prepared.meta["source"] == STAND_IN_SOURCE
    assert prepared.counts == {"train": 16, "val": 2, "test": 2}
    assert prepared.dual and prepared.meta["seq_len"] == 24
    tokens, lengths, label = prepared.split("train")[0]
    assert tokens.shape == (2, 24) and 0 <= label < 2
    assert all(
        (tokens[doc, lengths[doc] :] == 0).all() and (tokens[doc, : lengths[doc]] > 0).all() for doc in (0, 1)
    )
    assert "random tokens: not the retrieval data" in small_set_line(prepared.meta, "retrieval")
    with pytest.raises(DataNotPreparedError):  # a run without debug=fdr never reads it
        resolve("retrieval", tmp_path / "new-root")
    assert resolve_small("retrieval", tmp_path / "new-root", 16) == name


def test_a_generator_task_gets_a_few_generated_examples(tmp_path):
    shape = SetShape(seq_len=2000, vocab_size=16, num_classes=10)
    name = ensure_small("listops", tmp_path, 16, shape, LOG)
    assert name == "listops-debug16-generated"
    prepared = PreparedSet(name, tmp_path)
    assert prepared.counts == {"train": 16, "val": 2, "test": 2}
    assert prepared.meta["source"] == "generator"
    assert prepared.meta["command"].count("--name") == 1
    assert "16 generated examples: not the full listops set" in small_set_line(prepared.meta, "listops")


def test_a_prepared_set_wins_over_a_small_one(tmp_path):
    write_random_set(tmp_path, "text", seed=0)
    shape = SetShape(seq_len=32, vocab_size=257, num_classes=2)
    assert ensure_small("text", tmp_path, 16, shape, LOG) == "text"
    assert small_set_line(PreparedSet("text", tmp_path).meta, "text") is None
    assert not (tmp_path / "text-debug16-random").exists()


def test_an_existing_root_is_not_announced(tmp_path, caplog):
    with caplog.at_level(logging.INFO):
        note_new_root(tmp_path)
    assert not caplog.text
    with caplog.at_level(logging.INFO):
        note_new_root(tmp_path / "typo")
    assert caplog.text.count("\n") == 1 and f"data root {tmp_path / 'typo'} does not exist" in caplog.text


def test_the_report_marks_a_stand_in_as_not_the_data():
    labels = data_labels(
        {"task": {"name": "text"}}, {"set": "text-debug512-random", "source": STAND_IN_SOURCE}
    )
    assert labels == ["dataset=text-debug512-random", GENERATED, STAND_IN]


@pytest.mark.slow  # trains in a subprocess
def test_fdr_runs_image_from_an_empty_data_root(tmp_path):
    args = [
        "task=image",
        "attention=standard",
        "debug=fdr",
        f"data_root={tmp_path / 'data'}",
        "task.seq_len=64",
    ]
    result = python_m_lra(args, tmp_path, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "image-debug512-random, 512 examples of random tokens: not the image data" in result.stdout
    (summary_file,) = tmp_path.glob("outputs/image-standard-s0/*/summary.json")
    data = json.loads(summary_file.read_text())["data"]
    assert data["set"] == "image-debug512-random" and data["source"] == STAND_IN_SOURCE
