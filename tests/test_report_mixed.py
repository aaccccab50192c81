"""The report over a realistic mix of runs (``helpers.mixed_runs``: demos on generated data, two paper
presets on the LRA data, budget sweeps, SPT, failures): one panel per task × data set × protocol, axes
that span the data, every figure legible; and the options that choose the runs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers.mixed_runs import DEMO, FAILURES, RUN_COUNT, write_mixed_runs
from helpers.report_summaries import write_summary

from lra.report.cli import main
from lra.report.curves import read_curves
from lra.report.document import split_by_protocol
from lra.report.figure3 import speed_accuracy_memory
from lra.report.figures import accuracy_vs_time, validation_curves
from lra.report.runs import find_runs, latest_per_seed
from lra.results.plotting import agg_pyplot, text_problems

# (task, data, protocol) of each panel, as its title's lines say them
GROUPS = 8  # listops ×3 (preset, demo), text ×2 (two presets), retrieval, image, pathfinder ×2 (preset, demo)


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_mixed_runs(tmp_path_factory.mktemp("week"))


@pytest.mark.slow
def test_every_figure_has_a_panel_per_task_data_and_protocol_and_keeps_its_text_legible(mixed: Path):
    completed = latest_per_seed(split_by_protocol(find_runs([mixed])))
    curves, _ = read_curves(completed)
    figures = {
        "accuracy_vs_time": accuracy_vs_time(completed),
        "validation_curves": validation_curves(curves),
        "figure3 per task": speed_accuracy_memory(completed, per_task=True),
        "figure3": speed_accuracy_memory(completed),
    }
    for name, figure in figures.items():
        assert figure is not None, name
        assert text_problems(figure) == [], name
    for name in ("accuracy_vs_time", "validation_curves", "figure3 per task"):
        titles = [ax.get_title() for ax in figures[name].axes]
        assert len(titles) == len(set(titles)) == GROUPS, (name, titles)
        demo = [t for t in titles if "dataset=" in t and "generated" in t]
        assert len(demo) == 2 and all("experiment=demo" in t and "one_cycle" not in t for t in demo), name
    demo_panel = next(ax for ax in figures["accuracy_vs_time"].axes if "listops-demo" in ax.get_title())
    assert len(demo_panel.containers) == len(DEMO) + 1  # the ten attentions and the SPT demo, nothing else
    for ax in figures["figure3 per task"].axes + figures["figure3"].axes:
        assert ax.get_xlim()[0] >= 0  # never a negative speed
        assert ax.get_ylim()[0] > 0.5 * min(c.get_offsets()[0][1] for c in ax.collections)  # near the data
    (legend,) = figures["figure3 per task"].legends  # the crowded demo panel's variants, keyed by marker
    assert len(legend.get_texts()) == len(DEMO) + 1
    for figure in figures.values():
        agg_pyplot().close(figure)


@pytest.mark.slow
def test_the_report_of_the_week_writes_each_figure_and_leaves_failures_out_on_request(mixed: Path, tmp_path):
    out = tmp_path / "report"
    assert main(["--runs", str(mixed), "--out", str(out), "--exclude-failed"]) == 0
    for stem in ("lra_accuracy_vs_time", "lra_figure3", "lra_figure3_per_task", "skyformer_figure2"):
        assert (out / f"{stem}.png").is_file(), stem
    text = (out / "lra_table.md").read_text()
    failed = sum(status != "interrupted" for _, _, _, status, _ in FAILURES)
    assert f"- runs chosen: failed jobs left out (--exclude-failed): {failed} left out" in text
    assert f"from {RUN_COUNT - failed} summary.json file(s)" in text
    listed = text.split("## Failed, NaN and interrupted jobs")[1].split("\n## ")[0]
    assert "interrupted" in listed and "failed" not in listed.replace("Failed", "") and "nan" not in listed


def started(root: Path, task: str, attention: str, when: str, status: str = "completed") -> Path:
    """A run that started at ``when`` (ISO), with the run.json a job writes first."""
    run_dir = write_summary(root, task, attention, 0, 0.5 if status == "completed" else None, status=status,
                            finished=when, options={})  # fmt: skip
    summary = json.loads((run_dir / "summary.json").read_text())
    (run_dir / "summary.json").write_text(json.dumps(summary | {"started": when}))
    (run_dir / "run.json").write_text(json.dumps({"config": summary["config"], "options": {}}))
    return run_dir


def test_since_match_and_exclude_failed_choose_the_runs_of_the_report_and_the_progress(tmp_path, capsys):
    started(tmp_path / "monday", "listops", "nystrom", "2025-06-02T09:00:00")
    started(tmp_path / "tuesday", "listops", "standard", "2025-06-03T09:00:00")
    started(tmp_path / "tuesday", "text", "nystrom", "2025-06-03T10:00:00", status="failed")
    running = tmp_path / "tuesday" / "listops-performer-s0"  # no summary yet: its run.json's time counts
    running.mkdir()
    config = {"task": {"name": "listops"}, "attention": {"name": "performer"}}
    (running / "run.json").write_text(json.dumps({"config": config}))
    os.utime(running / "run.json", (1.0, 1.0))  # written in 1970
    assert main(["--progress", "--runs", str(tmp_path), "--since", "2025-06-03"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| listops")]
    assert [row.split(" | ")[1] for row in rows] == ["standard"]
    assert main(["--progress", "--runs", str(tmp_path), "--exclude-failed", "--match", "*tuesday*"]) == 0
    out = capsys.readouterr().out
    assert "| all |  | 1 | 0 | 1 | 0 |" in out  # the standard run, the stale performer; no failure
    assert "text-nystrom" not in out  # the failed job is left out of the reasons too
    out = tmp_path / "out"
    assert main(["--runs", str(tmp_path), "--out", str(out), "--match", "*/monday/*"]) == 0
    text = (out / "lra_table.md").read_text()
    assert "- runs chosen: in a folder matching '*/monday/*': 2 left out" in text
    ours = text.split("## Test accuracy (%)")[1].split("\n## ")[0]
    assert "| nystrom | 50.00 (1) |" in ours and "| standard |" not in ours
    with pytest.raises(FileNotFoundError, match="none of the 3 summary.json file.* loosen --since/--match"):
        main(["--runs", str(tmp_path), "--out", str(out), "--since", "2030-01-01"])
    with pytest.raises(SystemExit):
        main(["--runs", str(tmp_path), "--since", "Tuesday"])
    assert "is not a date: give YYYY-MM-DD" in capsys.readouterr().err
