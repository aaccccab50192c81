"""The preset a run trained under (``experiment=``): recorded in summary.json, named with the run's
protocol, and deciding, with the model's size, which published rows a run sits beside."""

from __future__ import annotations

from pathlib import Path

from helpers.report_summaries import write_summary

from lra.job.run_identity import preset_of
from lra.report.cli import main
from lra.results.published_numbers import LRA_ACCURACY, SKYFORMER_ACCURACY, comparable


def test_the_preset_is_the_experiment_override_as_typed():
    assert preset_of(["task=listops", "experiment=skyformer", "seed=1"]) == "skyformer"
    assert preset_of(["+experiment=demo"]) == "demo" and preset_of(["task=text"]) is None


def test_a_run_names_its_preset_before_its_protocol_and_rows_never_mix_presets(tmp_path: Path):
    write_summary(tmp_path, "listops", "nystrom", 0, 0.30, preset="demo")
    write_summary(tmp_path, "listops", "nystrom", 1, 0.40, finished="2025-01-02T10:00:00")
    out = tmp_path / "out"
    assert main(["--runs", str(tmp_path), "--out", str(out)]) == 0
    text = (out / "lra_table.md").read_text()
    assert "  - experiment=demo: warmup_linear, clip norm 1.0, best of all evaluations: 1 run(s)" in text
    assert (
        "| nystrom [experiment=demo: warmup_linear, clip norm 1.0, best of all evaluations] | 30.00 (1) |"
        in text
    )


def test_published_rows_compare_with_runs_of_their_preset_or_of_their_one_size():
    assert comparable(SKYFORMER_ACCURACY.size, SKYFORMER_ACCURACY.preset, (2, 64), None)  # default size
    assert not comparable(SKYFORMER_ACCURACY.size, SKYFORMER_ACCURACY.preset, (4, 256), None)
    assert not comparable(LRA_ACCURACY.size, LRA_ACCURACY.preset, (2, 64), "demo")  # per-task sizes
    assert comparable(LRA_ACCURACY.size, LRA_ACCURACY.preset, (2, 64), "lra")
