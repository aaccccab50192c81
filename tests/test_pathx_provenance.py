"""Path-X (``task=pathx``) and the provenance of Pathfinder sets: the release's and the generator's
sets have their own names, and ``lra.report`` never puts a generated run beside the LRA numbers."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
from conftest import compose_config
from helpers.source_samples import write_pathfinder_release

import data_prep
from data_prep.commands import main
from data_prep.recipes import RECIPES, ensure_prepared, resolve
from lra.job.train import run
from lra.report.cli import main as report_main
from lra.report.runs import GENERATED

PATHX_TOKENS = 128 * 128


def generate(root: Path, name: str, resolution: int = 32) -> None:
    """A tiny generated hard set (10 images) named ``name``."""
    argv = ["pathfinder", "--generate", "--num", "10", "--resolution", str(resolution), "--workers", "1"]
    assert main([*argv, "--name", name, "--root", str(root)]) == 0


def train(data_root: Path, out: Path, task: str, *extra: str) -> dict:
    """``python -m lra task=TASK attention=nystrom debug=fdr`` on ``data_root``: its summary."""
    overrides = [f"task={task}", "attention=nystrom", "debug=fdr", f"data_root={data_root}", *extra]
    summary = run(compose_config(overrides), out)
    assert summary["status"] == "completed", summary["error"]
    return summary


def test_pathx_config_is_pathfinder_at_16384_tokens():
    pathfinder, pathx = (compose_config([f"task={task}"]).task for task in ("pathfinder", "pathx"))
    assert (pathx.name, pathx.dataset, pathx.seq_len) == ("pathx", "pathx", PATHX_TOKENS)
    for key in ("vocab_size", "num_classes", "dual", "batch_size", "lr", "warmup_steps"):
        assert pathx[key] == pathfinder[key], key  # everything else composes from the pathfinder task


def test_pathx_recipe_reads_the_releases_pathfinder128_else_generates_at_128(tmp_path):
    builds = RECIPES["pathx"].builds
    assert [build.name for build in builds][-1] == "pathx-generated"
    assert builds[-1].source is None and "--resolution 128" in builds[-1].command(tmp_path)
    assert {build.source for build in builds[:-1]} == {
        "lra_release/pathfinder128/curv_contour_length_14",
        "lra_release/lra_release/pathfinder128/curv_contour_length_14",
    }
    expected = write_pathfinder_release(tmp_path, num_per_batch=4, side=128)
    assert ensure_prepared("pathx", tmp_path) == "pathx"  # the release wins over the generator
    splits = [data_prep.load("pathx", split, root=tmp_path) for split in ("train", "val", "test")]
    assert splits[0].tokens.shape[1:] == (PATHX_TOKENS,) and splits[0].meta["resolution"] == 128
    rows = {row.astype(np.uint8).tobytes(): label for split in splits for row, _, label in split}
    assert rows == expected


def test_pathx_trains_on_tiny_generated_data(tmp_path):
    """``task=pathx debug=fdr`` end to end on a tiny generated set; 32×32 images and ``task.seq_len``
    shrunk to match keep it fast (16K tokens on the CPU take tens of seconds a step)."""
    generate(tmp_path / "data", "pathx-generated")
    assert resolve("pathx", tmp_path / "data") == "pathx-generated"
    summary = train(tmp_path / "data", tmp_path / "out", "pathx", "task.seq_len=1024")
    assert summary["task"] == "pathx" and summary["metrics"]["train/steps"] == 2
    assert (summary["data"]["set"], summary["data"]["source"]) == ("pathx-generated", "generator")


def test_report_marks_the_generated_pathfinder_set_and_never_averages_it_with_the_release(tmp_path):
    release_root, generated_root, runs = tmp_path / "release", tmp_path / "generated", tmp_path / "runs"
    write_pathfinder_release(release_root, num_per_batch=4)
    assert (
        main(["pathfinder", "--source", str(release_root / "lra_release"), "--root", str(release_root)]) == 0
    )
    generate(generated_root, "pathfinder-generated")
    from_release = train(release_root, runs / "release", "pathfinder")
    from_generator = train(generated_root, runs / "generated", "pathfinder")
    assert (from_release["data"]["set"], from_generator["data"]["set"]) == (
        "pathfinder",
        "pathfinder-generated",
    )
    assert from_release["data"]["source"] != "generator" and from_generator["data"]["source"] == "generator"

    out = tmp_path / "results"
    assert report_main(["--runs", str(runs), "--out", str(out)]) == 0
    text = (out / "lra_table.md").read_text()
    rows = {cells[0]: cells[1:] for cells in table_rows(text)}
    release = "nystrom (num_landmarks=8)"  # debug=fdr's smallest budget
    marked = f"nystrom (num_landmarks=8, dataset=pathfinder-generated, {GENERATED})"
    assert set(rows) == {release, marked}  # two rows: the generated run is never pooled with the release
    pathfinder = 4  # column of the pathfinder task (listops, text, retrieval, image, pathfinder, average)
    # one run in each cell: "(1)", or "(1, 1 at chance)" now that summaries carry the majority share
    assert all(re.search(r"\(1[),]", rows[row][pathfinder]) for row in (release, marked))
    assert rows[marked][-1] == "none: not the LRA data"


def table_rows(text: str) -> list[list[str]]:
    """The body rows (cells) of the test accuracy table of ``lra_table.md``."""
    section = text.split("## Test accuracy (%)")[1].split("\n## ")[0]
    lines = [line for line in section.splitlines() if line.startswith("|")][2:]
    return [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in lines]
