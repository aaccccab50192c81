"""The report with self-pretrained (SPT) runs beside runs from scratch, on hand-made summary.json files:
rows of their own, the side-by-side table and its gain, Amos et al.'s Table 1 beside ours, the curves
after the pretraining, at-chance and generated-data marks, and the sweep's progress."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

from helpers.report_summaries import masked_pretrain, write_curve, write_summary

from lra.report.cli import main
from lra.report.curves import read_curve, read_curves
from lra.report.figures import accuracy_vs_time, validation_curves
from lra.report.runs import SCHEMAS, find_runs, latest_per_seed, load_run
from lra.report.spt import gain_cell
from lra.results.plotting import agg_pyplot, attention_color, text_problems
from lra.results.published_numbers import AMOS_SPT_ACCURACY
from lra.results.summary_json import SCHEMA

MAJORITY = {"train": 0.5, "val": 0.5, "test": 0.5}
SCRATCH = {"listops": (0.30, 0.35, 0.40), "text": (0.60, 0.64)}  # seeds 0, 1(, 2)
SPT = {"listops": (0.40, 0.44, 0.46), "text": (0.70, 0.72, 0.74)}


def report(runs: Path, *extra: str) -> str:
    out = runs.parent / "results"
    assert main(["--runs", str(runs), "--out", str(out), *extra]) == 0
    return (out / "lra_table.md").read_text()


def section(text: str, heading: str) -> str:
    return text.split(heading)[1].split("\n## ")[0].split("\n### ")[0]


def row(text: str, *labels: str) -> list[str]:
    """The cells after the first ``len(labels)`` of the table row that starts with ``labels``."""
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if tuple(cells[: len(labels)]) == labels:
            return cells[len(labels) :]
    raise AssertionError(f"no row {labels!r} in\n{text}")


def write_nystrom(root: Path) -> Path:
    """nystrom from scratch and after SPT on listops (seeds 0-2 each) and text (scratch seeds 0-1, SPT
    0-2), one schema-1 listops run among the scratch ones, and a compute-matched SPT run."""
    for task, accuracies in SCRATCH.items():
        for seed, acc in enumerate(accuracies):
            write_summary(root, task, "nystrom", seed, acc, schema=None if seed == 2 else 3)
    for task, accuracies in SPT.items():
        for seed, acc in enumerate(accuracies):
            write_summary(
                root, task, "nystrom", seed, acc, pretrain=masked_pretrain(masked_acc=0.3 + seed / 100)
            )
    write_summary(root, "listops", "nystrom", 0, 0.33, pretrain=masked_pretrain(), share=0.4)
    return root


def test_spt_runs_get_rows_of_their_own_beside_their_runs_from_scratch(tmp_path: Path):
    text = report(write_nystrom(tmp_path / "runs"))
    accuracy = section(text, "## Test accuracy (%)")
    # schema 1 (no "pretrain") and schema 3 with "pretrain": null are both from scratch: one row
    assert row(accuracy, "nystrom")[:2] == [
        "35.00 ± 5.00 [22.58, 47.42] (3)",
        "62.00 ± 2.83 [36.59, 87.41] (2)",
    ]
    assert row(accuracy, "nystrom (SPT)")[:2] == [
        "43.33 ± 3.06 [35.74, 50.92] (3)",
        "72.00 ± 2.00 [67.03, 76.97] (3)",
    ]
    assert row(accuracy, "nystrom (SPT share=0.4)")[0] == "33.00 (1)"
    side = section(text, "## From scratch vs self-pretrained (SPT)")
    # listops: the same seeds on both sides, paired: differences 10, 9 and 6 points
    paired = statistics.stdev([10, 9, 6])
    assert row(side, "listops", "nystrom", "SPT") == [
        "35.00 ± 5.00 (3)", "43.33 ± 3.06 (3)", f"+8.33 ± {paired:.2f} (3 paired)", "31.00 ± 1.00 (3)"
    ]  # fmt: skip
    # text: seeds 0-1 against 0-2, unpaired: the difference of the means ± √(2.83² + 2²)
    unpaired = math.hypot(statistics.stdev([60, 64]), 2.0)
    assert row(side, "text", "nystrom", "SPT")[2] == f"+10.00 ± {unpaired:.2f} (2 vs 3)"
    assert row(side, "listops", "nystrom", "SPT share=0.4")[:3] == [
        "35.00 ± 5.00 (3)",
        "33.00 (1)",
        "-2.00 ± 5.00 (3 vs 1)",
    ]
    assert "paired" in side and "√(std² + std²)" in side  # the note says how the gain's std is computed


def test_the_report_reads_the_schema_the_harness_writes():
    assert SCHEMA in SCHEMAS


def test_gain_of_one_seed_each_has_no_spread_and_a_missing_side_a_dash(tmp_path: Path):
    write_summary(tmp_path, "listops", "standard", 0, 0.30)
    write_summary(tmp_path, "listops", "standard", 0, 0.36, pretrain=masked_pretrain())
    scratch, spt = sorted(find_runs([tmp_path]), key=lambda run: run.spt is not None)
    assert gain_cell([scratch], [spt]) == "+6.00 (1 vs 1)"
    assert gain_cell([], [spt]) == "—"


def test_a_report_without_spt_runs_has_no_spt_section(tmp_path: Path):
    write_summary(tmp_path / "runs", "listops", "nystrom", 0, 0.3)
    text = report(tmp_path / "runs")
    assert "## From scratch vs self-pretrained" not in text and AMOS_SPT_ACCURACY.paper not in text


def test_amos_table_one_stands_beside_our_standard_rows(tmp_path: Path):
    runs = tmp_path / "runs"
    for index, task in enumerate(AMOS_SPT_ACCURACY.columns):  # every column, Path-X included
        write_summary(runs, task, "standard", 0, 0.40 + index / 100, preset="amos")
        write_summary(
            runs, task, "standard", 0, 0.60 + index / 100, pretrain=masked_pretrain(), preset="amos"
        )
    generated = {"set": "listops-generated", "source": "generator"}
    write_summary(
        runs, "listops", "standard", 1, 0.9, pretrain=masked_pretrain(), data=generated, preset="amos"
    )
    table = section(report(runs), "### Beside the published numbers")
    assert AMOS_SPT_ACCURACY.paper in table
    assert row(table, "standard: from scratch")[:-1] == [
        "40.00 (1) / 36.37", "41.00 (1) / 64.27", "42.00 (1) / 57.46", "43.00 (1) / 42.44",
        "44.00 (1) / 71.40", "45.00 (1) / chance", "42.50 / 53.66",
    ]  # fmt: skip
    assert row(table, "standard: causal SPT")[-3:-1] == ["— / 88.05", "— / 81.81"]  # none of ours is causal
    masked = row(table, "standard (SPT): masked SPT")  # ours, masked, beside the masked row
    assert masked[-3:-1] == ["65.00 (1) / not transcribed", "62.50 / not transcribed"]
    assert "Table 1, masked SPT" in masked[-1]
    assert "generated data" not in table  # runs on generated data never sit beside a paper's figure


def test_amos_table_shows_the_papers_rows_without_our_runs_of_another_size(tmp_path: Path):
    write_summary(tmp_path / "runs", "listops", "nystrom", 0, 0.4, pretrain=masked_pretrain())
    write_summary(tmp_path / "runs", "listops", "standard", 0, 0.4, pretrain=masked_pretrain())  # 2 × 64
    table = section(report(tmp_path / "runs"), "### Beside the published numbers")
    assert row(table, "standard: from scratch")[0] == "— / 36.37"
    assert row(table, "standard: causal SPT")[0] == "— / 59.15"
    assert row(table, "standard: masked SPT")[0] == "— / not transcribed"
    assert "Ours beside them: runs under `experiment=amos`." in table
    assert "Left out, trained otherwise or at another size: standard (SPT)." in table  # of its model only


def test_spt_runs_at_chance_and_on_generated_data_are_marked_as_any_other(tmp_path: Path):
    runs = tmp_path / "runs"
    generated = {"set": "listops-generated", "source": "generator", "majority_share": MAJORITY}
    for seed, acc in enumerate((0.505, 0.60)):  # 50.5% is at chance: at most 50% + 1 point
        write_summary(runs, "listops", "nystrom", seed, 0.55, schema=3, data=generated)
        write_summary(runs, "listops", "nystrom", seed, acc, data=generated, pretrain=masked_pretrain())
    text = report(runs)
    assert "- listops nystrom (dataset=listops-generated, generated data, SPT) seed 0" in text
    marked = row(
        section(text, "## Test accuracy (%)"), "nystrom (dataset=listops-generated, generated data, SPT)"
    )
    assert (
        marked[0] == "55.25 ± 6.72 [-5.10, 115.60] (2, 1 at chance)"
        and marked[-1] == "none: not the LRA data"
    )
    side = section(text, "## From scratch vs self-pretrained (SPT)")
    assert row(side, "listops", "nystrom (dataset=listops-generated, generated data)", "SPT")[1] == (
        "55.25 ± 6.72 (2, 1 at chance)"
    )


def test_rows_split_by_protocol_pair_spt_with_scratch_of_the_same_protocol(tmp_path: Path):
    runs = tmp_path / "runs"
    other = {"schedule": "one_cycle", "clip": "value", "clip_value": 1.0, "select_after": 0.2}
    write_summary(runs, "listops", "nystrom", 0, 0.30)
    write_summary(runs, "listops", "nystrom", 0, 0.10, protocol=other, finished="2025-01-02T10:00:00")
    write_summary(runs, "listops", "nystrom", 0, 0.40, pretrain=masked_pretrain())
    side = section(report(runs), "## From scratch vs self-pretrained (SPT)")
    scratch = "nystrom [warmup_linear, clip norm 1.0, best of all evaluations]"
    assert row(side, "listops", scratch, "SPT")[:3] == ["30.00 (1)", "40.00 (1)", "+10.00 (1 vs 1)"]


def test_spt_curves_start_after_their_pretraining_and_a_missing_time_is_named(tmp_path: Path):
    spt = write_summary(tmp_path, "listops", "nystrom", 0, 0.4, pretrain=masked_pretrain(time_s=600.0))
    write_curve(spt, [(10.0, 0.3), (20.0, 0.4)], pretraining=[(300.0, 0.2), (600.0, 0.25)])
    curve = read_curve(load_run(spt / "summary.json"))
    assert curve.seconds == (610.0, 620.0) and curve.accuracy == (0.3, 0.4)  # pretraining rows left out
    unknown = write_summary(tmp_path, "text", "nystrom", 0, 0.6, pretrain=masked_pretrain(time_s=None))
    write_curve(unknown, [(10.0, 0.5)])
    _, missing = read_curves([load_run(unknown / "summary.json")])
    assert "no pretraining time" in missing[0][1]


def write_curves(root: Path, seconds: float) -> Path:
    """standard and nystrom on listops and image, from scratch and after SPT (pretraining ``seconds``
    long), two seeds each with curves; one scratch standard run at chance."""
    for attention, offset in (("standard", 0.0), ("nystrom", 0.02)):
        for task in ("listops", "image"):
            for seed in (0, 1):
                acc = 0.505 if attention == "standard" and seed == 0 else 0.55 + offset
                data = {"set": task, "majority_share": MAJORITY}
                config = {"attention": {"name": attention}, "task": {"name": task, "dataset": task}}
                kwargs = {"data": data, "config": config, "train_time_s": seconds}
                scratch = write_summary(root, task, attention, seed, acc, schema=3, **kwargs)
                write_curve(scratch, [(seconds / 3, 0.4), (2 * seconds / 3, 0.5), (seconds, acc)])
                pretrain = masked_pretrain(time_s=seconds / 2)
                spt = write_summary(root, task, attention, seed, acc + 0.1, pretrain=pretrain, **kwargs)
                write_curve(spt, [(seconds / 3, 0.5), (2 * seconds / 3, 0.6), (seconds, acc + 0.1)])
    return root


def test_figures_draw_spt_apart_in_the_attentions_colour_and_keep_their_text_inside(tmp_path: Path):
    completed = latest_per_seed(find_runs([write_curves(tmp_path / "runs", 1200.0)]))
    curves, missing = read_curves(completed)
    assert not missing
    figure = validation_curves(curves)
    lines = {line.get_label(): line for line in figure.axes[0].get_lines()}
    assert lines["nystrom (SPT)"].get_linestyle() == "--" and lines["nystrom"].get_linestyle() == "-"
    assert lines["nystrom (SPT)"].get_color() == lines["nystrom"].get_color() == attention_color("nystrom")
    assert lines["standard (1 at chance)"].get_marker() == "o"  # at chance: hollow markers
    assert min(lines["nystrom (SPT)"].get_xdata()) == (600 + 400) / 60  # minutes: pretraining first
    assert text_problems(figure) == []
    agg_pyplot().close(figure)
    figure = accuracy_vs_time(completed)
    points = {bars.get_label(): bars.lines[0] for bars in figure.axes[0].containers}
    assert points["nystrom (SPT)"].get_marker() == "s" and points["nystrom"].get_marker() == "o"
    assert points["nystrom (SPT)"].get_xdata()[0] == (600 + 1200) / 60  # the fit and its pretraining
    assert "training time incl. pretraining" in figure.axes[0].get_xlabel()
    assert text_problems(figure) == []
    agg_pyplot().close(figure)


def test_the_report_writes_the_figures_with_spt_runs(tmp_path: Path):
    text = report(write_curves(tmp_path / "runs", 1200.0), "--paper", "skyformer")
    out = tmp_path / "results"
    assert (out / "skyformer_figure2.png").is_file() and (out / "lra_accuracy_vs_time.png").is_file()
    assert "Runs without a curve" not in text
    # Table 2 (text, listops, ...): the hours count the pretraining, 1200 s + 600 s = 0.5 h
    assert row(section(text, "### Table 2"), "nystrom (SPT)")[1].startswith("0.500 ± 0.000 (2)")  # listops


def progress_job(sweep: Path, name: str, options: dict, mode: str) -> None:
    folder = sweep / name
    folder.mkdir(parents=True)
    config = {"task": {"name": "listops"}, "attention": {"name": "nystrom"}, "pretrain": {"mode": mode}}
    (folder / "run.json").write_text(json.dumps({"config": config, "options": options}))
    summary = {"task": "listops", "attention": "nystrom", "status": "completed", "options": options}
    (folder / "summary.json").write_text(json.dumps(summary | {"config": config}))


def test_progress_counts_spt_jobs_apart_swept_or_not(tmp_path: Path, capsys):
    progress_job(tmp_path, "0_listops-nystrom-pretrain=none-s0", {"pretrain": "none"}, "none")
    progress_job(tmp_path, "1_listops-nystrom-pretrain=masked-s0", {"pretrain": "masked"}, "masked")
    progress_job(tmp_path, "single-scratch", {}, "none")
    progress_job(tmp_path, "single-spt", {}, "masked")
    assert main(["--progress", "--runs", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[2:4] == [
        "| listops | nystrom | 2 | 0 | 0 | 0 | 0 |",
        "| listops | nystrom (SPT) | 2 | 0 | 0 | 0 | 0 |",
    ]
