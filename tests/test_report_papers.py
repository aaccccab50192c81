"""The report's papers' artefacts on synthetic summary.json files (schema 2): runs at chance flagged,
``--paper``, ``--final``, validation curves from the metrics CSVs (a truncated one named), every figure
legible, and the same tables in W&B (offline)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from conftest import compose_config, smoke_overrides
from helpers.mixed_runs import DEMO
from helpers.report_summaries import write_curve, write_summary

from lra.job.train import run
from lra.report.cli import main
from lra.report.curves import read_curve, read_curves
from lra.report.figure3 import MAX_LABELS, speed_accuracy_memory
from lra.report.figures import accuracy_vs_time, validation_curves
from lra.report.runs import find_runs, latest_per_seed, load_run
from lra.results.plotting import agg_pyplot, save_figure, text_problems
from lra.results.published_numbers import TASKS

MAJORITY = {"train": 0.5, "val": 0.5, "test": 0.5}
# attention -> (test accuracy, median step ms, peak RSS MB); a long variant label tests the legend
SWEEP = {
    "standard": (0.62, 40.0, 4000.0),
    "nystrom": (0.60, 20.0, 1500.0),
    "skyformer": (0.61, 25.0, 1800.0),
    "performer": (0.505, 18.0, 1200.0),  # at chance: at most 50% + 1 point
}
LONG_VARIANT = {
    "attention": {"name": "nystrom", "num_landmarks": 32, "conv_kernel": 33},
    "task": {"name": "listops", "dataset": "listops"},
}


def write_sweep(root: Path, seconds_per_step_ms: float = 30.0) -> Path:
    """Two seeds of each ``SWEEP`` attention on all five tasks, with curves, ``step_ms ×
    seconds_per_step_ms`` seconds long; a budget variant of nystrom on listops only (so the per-task
    chart is drawn); one curve file cut mid-row."""
    for attention, (acc, step_ms, rss) in SWEEP.items():
        for task in TASKS:
            for seed in (0, 1):
                run_dir = write_summary(
                    root, task, attention, seed, acc + 0.01 * seed, schema=2,
                    config={"attention": {"name": attention}, "task": {"name": task, "dataset": task},
                            "features": 128},
                    data={"set": task, "majority_share": MAJORITY},
                    metrics={"perf/step_ms": step_ms, "perf/peak_rss_mb": rss, "test/acc_final": acc - 0.02},
                    train_time_s=step_ms * seconds_per_step_ms,
                )  # fmt: skip
                scale = step_ms * seconds_per_step_ms / 3
                write_curve(run_dir, [(scale, 0.4), (2 * scale, acc - 0.05 + 0.03 * seed), (3 * scale, acc)])
    variant = write_summary(
        root, "listops", "nystrom", 0, 0.3, config=LONG_VARIANT, schema=2, finished="2025-01-02T10:00:00",
        data={"set": "listops", "majority_share": MAJORITY}, metrics={"perf/step_ms": 15.0},
    )  # fmt: skip
    write_curve(variant, [(1.0, 0.2), (2.0, 0.3)], cut=True)
    return root


def test_runs_at_chance_are_flagged_in_the_tables_and_counted_at_the_top(tmp_path: Path):
    out = tmp_path / "results"
    runs = write_sweep(tmp_path / "runs")
    assert main(["--runs", str(runs), "--out", str(out), "--final", "--paper", "nystromformer"]) == 0
    text = (out / "lra_table.md").read_text()
    # performer: 50.5% (at chance: at most 50% + 1 point) and 51.5% (not) on each task
    assert "| performer | 51.00 ± 0.71 [44.65, 57.35] (2, 1 at chance) |" in text
    # five performer runs and the budget variant's 30%
    assert "at most the test split's majority-class share + 1 point): 6 run(s)" in text
    assert "## Test accuracy at the final weights (%)" in text
    assert "| standard | 62.50 ± 0.71 [56.15, 68.85] (2) |" in text  # test/acc: 62% and 63%
    assert "| standard | 60.00 ± 0.00 [60.00, 60.00] (2) |" in text.split("final weights")[1]  # 60% twice


def test_schema_one_runs_say_no_flag_is_possible_and_other_schemas_one_line(tmp_path: Path, capsys):
    write_summary(tmp_path, "listops", "nystrom", 0, 0.17)  # schema 1: no majority share
    write_summary(tmp_path, "text", "nystrom", 0, 0.6, schema=4, finished="2025-01-02")
    out = tmp_path / "results"
    assert main(["--runs", str(tmp_path), "--out", str(out)]) == 0
    text = (out / "lra_table.md").read_text()
    assert "1 run(s) record no majority-class share (1 with schema-1 summaries" in text
    assert "summary.json schema 4 is not one this report reads" in text  # listed with the unreadable
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("skipped 1 summary.json file(s) of another schema")


def test_paper_option_picks_one_papers_artefacts(tmp_path: Path):
    runs, out = write_sweep(tmp_path / "runs"), tmp_path / "results"
    assert main(["--runs", str(runs), "--out", str(out), "--paper", "lra"]) == 0
    text = (out / "lra_table.md").read_text()
    assert "## LRA paper" in text and "Skyformer paper" not in text and "Nyströmformer paper" not in text
    for stem in ("lra_figure3", "lra_figure3_per_task", "lra_accuracy_vs_time"):
        assert (out / f"{stem}.png").is_file() and (out / f"{stem}.svg").is_file(), stem
    assert not (out / "skyformer_figure2.png").exists()


def test_truncated_metrics_csv_is_named_and_the_rest_is_written(tmp_path: Path):
    runs, out = write_sweep(tmp_path / "runs"), tmp_path / "results"
    assert main(["--runs", str(runs), "--out", str(out), "--paper", "skyformer"]) == 0
    text = (out / "lra_table.md").read_text()
    missing = text.split("Runs without a curve")[1].split("\n## ")[0]
    assert "| listops | nystrom (num_landmarks=32) | 0 | csv/metrics.csv is truncated" in missing
    assert len([line for line in missing.splitlines() if line.startswith("| listops")]) == 1  # that run only
    assert (out / "skyformer_figure2.png").is_file() and "![Figure 2" in text
    assert "| performer (5 run(s) at chance) | 0.150 ± 0.000 (2) ×0.45 / 0.77 ×0.18 |" in text  # Table 2


@pytest.mark.parametrize("seconds_per_step_ms", [0.5, 600.0])  # runs of seconds (a narrow log range), hours
def test_every_report_figure_keeps_its_text_inside_and_tick_labels_apart(tmp_path: Path, seconds_per_step_ms):
    completed = latest_per_seed(find_runs([write_sweep(tmp_path, seconds_per_step_ms)]))
    curves, missing = read_curves(completed)
    assert len(missing) == 1
    figures = {
        "accuracy_vs_time": accuracy_vs_time(completed),
        "validation_curves": validation_curves(curves),
        "speed_accuracy_memory": speed_accuracy_memory(completed),
        "speed_accuracy_memory per task": speed_accuracy_memory(completed, per_task=True),
    }
    for name, figure in figures.items():
        assert figure is not None, name
        assert text_problems(figure) == [], name
        agg_pyplot().close(figure)


CROWDED = DEMO  # ten markers crowded as in a short CPU demo, several within a marker's width
DEMO_MAJORITY = {"train": 0.131, "val": 0.131, "test": 0.131}


def write_crowded(root: Path, count: int) -> Path:
    """The first ``count`` ``CROWDED`` attentions on the demo's generated ListOps."""
    for attention, (acc, step_ms) in list(CROWDED.items())[:count]:
        write_summary(
            root, "listops", attention, 0, acc, schema=2,
            config={"attention": {"name": attention, "num_landmarks": 16}, "task": {"name": "listops"},
                    "features": 16},
            data={"set": "listops-demo", "source": "generator", "majority_share": DEMO_MAJORITY},
            metrics={"perf/step_ms": step_ms, "perf/peak_rss_mb": 500.0 + 10 * step_ms},
        )  # fmt: skip
    return root


def test_figure3_puts_every_label_beside_its_own_marker_or_joins_them_by_a_leader_line(tmp_path: Path):
    figure = speed_accuracy_memory(latest_per_seed(find_runs([write_crowded(tmp_path, MAX_LABELS)])), True)
    assert figure is not None
    (ax,) = figure.axes
    assert len(ax.texts) == MAX_LABELS and not figure.legends
    assert text_problems(figure) == []
    save_figure(figure, tmp_path / "figure3.png")


def test_figure3_lists_more_than_eight_variants_of_a_panel_in_a_legend_keyed_by_marker(tmp_path: Path):
    figure = speed_accuracy_memory(latest_per_seed(find_runs([write_crowded(tmp_path, len(CROWDED))])), True)
    assert figure is not None
    (ax,) = figure.axes
    (legend,) = figure.legends
    assert not ax.texts and [t.get_text().split(" (")[0] for t in legend.get_texts()] == sorted(CROWDED)
    markers = {(h.get_marker(), h.get_color()) for h in legend.legend_handles}
    assert len(markers) == len(CROWDED)  # each entry tells its marker apart
    assert text_problems(figure) == []
    agg_pyplot().close(figure)


def test_figure3_per_task_wraps_the_long_titles_of_generated_sets_apart(tmp_path: Path):
    for task, dataset in (("listops", "listops-demo"), ("pathfinder", "pathfinder-demo")):
        for attention, (acc, step_ms) in list(CROWDED.items())[:3]:
            write_summary(
                tmp_path, task, attention, 0, acc, schema=2,
                config={"attention": {"name": attention, "num_landmarks": 16}, "task": {"name": task},
                        "features": 16},
                data={"set": dataset, "source": "generator", "majority_share": DEMO_MAJORITY},
                metrics={"perf/step_ms": step_ms, "perf/peak_rss_mb": 500.0},
            )  # fmt: skip
    figure = speed_accuracy_memory(latest_per_seed(find_runs([tmp_path])), per_task=True)
    assert figure is not None and len(figure.axes) == 2
    assert text_problems(figure) == []
    agg_pyplot().close(figure)


def wandb_records(run_dir: Path, wait_s: float = 30.0) -> bytes:
    """The offline run's record file, once W&B's service has written past its header: on a loaded
    machine the service can still be flushing it for a moment after ``run.finish()`` returns."""
    deadline = time.monotonic() + wait_s
    while True:
        records = next(run_dir.glob("run-*.wandb")).read_bytes()
        if len(records) > 64 or time.monotonic() > deadline:
            return records
        time.sleep(0.2)


def test_wandb_logs_the_tables_and_figures_to_one_offline_report_run(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    runs, out = write_sweep(tmp_path / "runs"), tmp_path / "results"
    assert main(["--runs", str(runs), "--out", str(out), "--paper", "nystromformer", "--wandb"]) == 0
    (run_dir,) = (out / "wandb").glob("offline-run-*")
    assert b"report" in wandb_records(run_dir)  # the job type
    (table_file,) = run_dir.rglob("table_3_test_accuracy_*.table.json")
    table = json.loads(table_file.read_text())
    markdown = (out / "lra_table.md").read_text().split("### Table 3")[1]
    row = next(line for line in markdown.splitlines() if line.startswith("| standard |"))
    assert table["columns"][:2] == ["attention", "listops"]
    assert " | ".join(table["data"][0]) == row.strip("| ")  # the same row as the markdown
    assert any(run_dir.rglob("lra_accuracy_vs_time_*.png"))


def test_unknown_paper_is_one_line(tmp_path: Path, capsys):
    with pytest.raises(SystemExit):
        main(["--runs", str(tmp_path), "--paper", "other"])
    assert "invalid choice: 'other'" in capsys.readouterr().err


def test_a_run_writes_its_validation_curve_whatever_the_logger(data_root: Path, tmp_path: Path):
    extra = ("logger=none", "trainer.max_steps=3", "task.eval_every=2")
    summary = run(compose_config(smoke_overrides(data_root, "listops", "standard", *extra)), tmp_path)
    assert summary["status"] == "completed", summary["error"]
    curve = read_curve(load_run(tmp_path / "summary.json"))
    assert len(curve.seconds) == 2  # at step 2 (eval_every) and at the last step (3)
    assert 0 < curve.seconds[0] < curve.seconds[1] <= summary["metrics"]["perf/train_time_s"]
    assert all(0 <= accuracy <= 1 for accuracy in curve.accuracy)


def test_the_ssm_rows_sit_beside_the_runs_marked_as_other_models(tmp_path: Path):
    runs, out = write_sweep(tmp_path / "runs"), tmp_path / "results"
    assert main(["--runs", str(runs), "--out", str(out), "--paper", "ssm"]) == 0
    text = (out / "lra_table.md").read_text()
    section = text.split("## State-space models and Mega")[1].split("\n## ")[0]
    rows = {line.split("|")[1].strip(): line for line in section.splitlines() if line.startswith("| ")}
    assert "standard" in rows and "nystrom" in rows  # our runs, every variant on the LRA data
    s4 = next(line for name, line in rows.items() if name.startswith("S4 (published"))
    assert "another model, another size" in s4 and "| 96.35 |" in s4 and s4.rstrip(" |").endswith("86.09")
    assert sum("another model, another size" in line for line in rows.values()) == 4
    assert "| — |" in rows["standard"]  # no Path-X runs: no six-task average


def test_the_papers_tables_are_left_out_with_one_line_when_every_run_is_on_generated_data(tmp_path: Path):
    out = tmp_path / "report"
    assert main(["--runs", str(write_crowded(tmp_path / "runs", 4)), "--out", str(out)]) == 0
    text = (out / "lra_table.md").read_text()
    skyformer = text.split("## Skyformer")[1].split("\n## ")[0]
    assert "every run here trained on generated data" in skyformer and "—" not in skyformer
    assert (out / "lra_figure3_per_task.png").is_file()  # the papers' figures stay
