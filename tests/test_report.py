"""``python -m lra.report`` on hand-made summary.json files: mean ± std, averages, failed jobs apart."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from helpers.report_summaries import write_summary

from lra.report.cli import main
from lra.results.published_numbers import ACCURACY

REPO = Path(__file__).resolve().parents[1]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
SKYFORMER_PROTOCOL = {"schedule": "one_cycle", "clip": "value", "clip_value": 1.0, "select_after": 0.2}


# nystrom: all five tasks, three seeds each (fractions as the harness writes them)
NYSTROM = {
    "listops": (0.30, 0.35, 0.40),  # mean 35.00, sample std 5.00
    "text": (0.60, 0.62, 0.64),  # 62.00 ± 2.00
    "retrieval": (0.80, 0.80, 0.80),  # 80.00 ± 0.00
    "image": (0.40, 0.43, 0.46),  # 43.00 ± 3.00
    "pathfinder": (0.70, 0.72, 0.74),  # 72.00 ± 2.00
}
NYSTROM_AVERAGE = (35.00 + 62.00 + 80.00 + 43.00 + 72.00) / 5  # 58.40


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    single, sweep = tmp_path / "outputs", tmp_path / "multirun" / "2025-01-01" / "0"
    for task, accuracies in NYSTROM.items():
        for seed, acc in enumerate(accuracies):
            write_summary(
                sweep if seed else single, task, "nystrom", seed, acc, train_time_s=1800.0 * (seed + 1)
            )
    # standard: two tasks only; seed 0 of listops was rerun, the later run replaces the earlier one
    write_summary(single, "listops", "standard", 0, 0.10, finished="2025-01-01T08:00:00")
    write_summary(single, "listops", "standard", 0, 0.37, finished="2025-01-02T08:00:00")
    write_summary(single, "listops", "standard", 1, 0.39)
    write_summary(single, "text", "standard", 0, 0.655)
    # a budget variant is its own row
    write_summary(
        sweep, "listops", "nystrom", 0, 0.20, config={"attention": {"name": "nystrom", "num_landmarks": 32}}
    )
    # jobs that did not complete are listed apart and never counted
    write_summary(
        sweep, "text", "skyformer", 0, None, status="failed", error="Traceback ...\nRuntimeError: boom"
    )
    write_summary(sweep, "image", "performer", 2, 0.99, status="nan", error="loss is NaN at step 17")
    write_summary(sweep, "pathfinder", "reformer", 1, None, status="interrupted")
    (sweep / "broken").mkdir()
    (sweep / "broken" / "summary.json").write_text("{not json")
    return tmp_path


def table_row(text: str, label: str) -> list[str]:
    section = text.split("## Test accuracy (%)")[1].split("\n## ")[0]
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if cells[0] == label:
            return cells[1:]
    raise AssertionError(f"no row {label!r} in\n{section}")


def test_mean_std_seed_count_and_average(runs: Path):
    out = runs / "results"
    assert main(["--runs", str(runs / "outputs"), str(runs / "multirun"), "--out", str(out)]) == 0
    text = (out / "lra_table.md").read_text()
    assert table_row(text, "nystrom") == [
        "35.00 ± 5.00 [22.58, 47.42] (3)",  # the 95% interval: ± t(2) 4.303 × 5 / √3
        "62.00 ± 2.00 [57.03, 66.97] (3)",
        "80.00 ± 0.00 [80.00, 80.00] (3)",
        "43.00 ± 3.00 [35.55, 50.45] (3)",
        "72.00 ± 2.00 [67.03, 76.97] (3)",
        f"{NYSTROM_AVERAGE:.2f}",
    ]
    # the rerun seed 0 (37) replaces the first (10): mean of 37 and 39, sample std √2, ± t(1) 12.71 × √2 / √2
    assert table_row(text, "standard") == [
        "38.00 ± 1.41 [25.29, 50.71] (2)",
        "65.50 (1)",
        "—",
        "—",
        "—",
        "missing: retrieval, image, pathfinder",
    ]
    assert table_row(text, "nystrom (num_landmarks=32)")[0] == "20.00 (1)"
    assert (out / "lra_accuracy_vs_time.png").read_bytes().startswith(PNG_MAGIC)


def test_failed_jobs_are_listed_apart_and_not_counted(runs: Path):
    out = runs / "results"
    main(["--runs", str(runs), "--out", str(out)])
    text = (out / "lra_table.md").read_text()
    accuracy = text.split("## Test accuracy (%)")[1].split("\n## ")[0]
    assert "skyformer" not in accuracy and "performer" not in accuracy and "reformer" not in accuracy
    failed = text.split("## Failed, NaN and interrupted jobs")[1].split("##")[0]
    assert "| text | skyformer | 0 | failed | RuntimeError: boom |" in failed
    assert "| image | performer | 2 | nan | loss is NaN at step 17 |" in failed
    assert "| pathfinder | reformer | 1 | interrupted |" in failed
    assert "unreadable" in failed and "broken" in failed
    # 24 files: 15 nystrom + 4 standard (one a rerun) + 1 variant + 3 not completed + 1 unreadable
    assert "24 summary.json file(s): 19 completed run(s) counted" in text


def test_time_table_in_hours_and_published_numbers_beside(runs: Path):
    out = runs / "results"
    main(["--runs", str(runs), "--out", str(out)])
    text = (out / "lra_table.md").read_text()
    # Skyformer Table 2's layout: nystrom text (its first column): 1800, 3600, 5400 s -> 1.000 ± 0.500 h,
    # beside the paper's 0.71 h; ratios to each side's standard
    assert "| nystrom | 1.000 ± 0.500 (3) ×1.00 / 0.71 ×0.17 |" in text
    assert "Our runs trained 100 steps" in text
    assert "ours: CPU peak RSS" in text and "| nystrom | 2.00 ± 0.00 (3) ×1.00 / 1.21 ×0.12 |" in text
    for table in ACCURACY:
        assert table.paper in text
    # the AVG the paper prints (Skyformer Table 1, its column order), ours beside each figure
    assert "| skyformer | — / 64.70 | — / 38.69 | — / 82.06 | — / 70.73 | — / 40.77 | — / 59.39 |" in text
    assert (
        "| standard | 38.00 ± 1.41 (2) / 37.10 | 65.50 (1) / 65.02 | — / 79.35 |" in text
    )  # Nyströmformer's
    # the LRA paper's per-task models are another size: our 2 × 64 runs never sit beside its rows
    lra_table = text.split("## LRA paper")[1].split("\n## ")[0]
    assert "| standard | — / 36.37 | — / 64.27 | — / 57.46 |" in lra_table
    assert (
        "Ours beside them: runs under `experiment=lra`. Left out, trained otherwise or at another size: "
        in lra_table
    )
    assert "`attention.name`" in text and "test/acc" in text  # the W&B grouping
    assert f"python -m lra.report --runs {runs} --out {out}" in text


def test_by_default_the_report_goes_to_the_git_ignored_outputs_report_folder(
    runs: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.chdir(runs)  # a checkout with outputs/ and multirun/, as after `make run`
    assert main([]) == 0
    assert (runs / "outputs" / "report" / "lra_table.md").is_file()
    assert (runs / "outputs" / "report" / "lra_accuracy_vs_time.png").is_file()
    assert not (runs / "results").exists()
    assert main([]) == 0  # the report folder under outputs/ is not mistaken for a run
    ignored = subprocess.run(
        ["git", "check-ignore", "-q", "outputs/report/lra_table.md"], cwd=REPO, check=False
    )
    assert ignored.returncode == 0, "outputs/ is not in .gitignore"


def test_no_runs_is_a_clear_error(tmp_path: Path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="python -m lra task="):
        main(["--runs", str(tmp_path / "empty"), "--out", str(tmp_path / "results")])
    with pytest.raises(SystemExit):
        main(["--runs", str(tmp_path / "does-not-exist")])


def test_runs_on_another_prepared_set_get_their_own_row(tmp_path: Path):
    demo = {"attention": {"name": "nystrom"}, "task": {"name": "listops", "dataset": "listops-demo"}}
    lra_set = {"attention": {"name": "nystrom"}, "task": {"name": "listops", "dataset": "listops"}}
    write_summary(tmp_path, "listops", "nystrom", 0, 0.50, config=demo)
    write_summary(tmp_path, "listops", "nystrom", 0, 0.30, config=lra_set, finished="2025-01-02T10:00:00")
    out = tmp_path / "results"
    assert main(["--runs", str(tmp_path), "--out", str(out)]) == 0
    text = (out / "lra_table.md").read_text()
    assert table_row(text, "nystrom (dataset=listops-demo)")[0] == "50.00 (1)"
    assert table_row(text, "nystrom")[0] == "30.00 (1)"


def test_runs_trained_under_other_protocols_get_their_own_rows_and_the_header_says_so(tmp_path: Path):
    write_summary(tmp_path, "listops", "nystrom", 0, 0.30)
    write_summary(tmp_path, "listops", "nystrom", 1, 0.40, finished="2025-01-02T10:00:00")
    write_summary(tmp_path, "listops", "nystrom", 0, 0.50, protocol=SKYFORMER_PROTOCOL, finished="2025-01-03")
    out = tmp_path / "results"
    assert main(["--runs", str(tmp_path), "--out", str(out)]) == 0
    text = (out / "lra_table.md").read_text()
    assert "training protocols differ between these runs" in text
    assert "  - one_cycle, clip value 1.0, best after 20%: 1 run(s)" in text
    assert "  - warmup_linear, clip norm 1.0, best of all evaluations: 2 run(s)" in text
    assert table_row(text, "nystrom [one_cycle, clip value 1.0, best after 20%]")[0] == "50.00 (1)"
    assert (
        table_row(text, "nystrom [warmup_linear, clip norm 1.0, best of all evaluations]")[0]
        == "35.00 ± 7.07 [-28.53, 98.53] (2)"
    )


def test_one_protocol_is_named_in_the_header(runs: Path, tmp_path: Path):
    assert main(["--runs", str(runs), "--out", str(tmp_path / "results")]) == 0
    text = (tmp_path / "results" / "lra_table.md").read_text()
    assert "- training protocol: warmup_linear, clip norm 1.0, best of all evaluations" in text


def test_generated_data_gets_its_own_marked_row_and_no_lra_average(tmp_path: Path):
    release = {"dataset": "listops", "set": "listops", "source": "/data/lra_release/listops-1000"}
    generated = {"dataset": "listops", "set": "listops-generated", "source": "generator"}
    config = {"attention": {"name": "nystrom"}, "task": {"name": "listops", "dataset": "listops"}}
    write_summary(tmp_path, "listops", "nystrom", 0, 0.38, config=config, data=release)
    write_summary(
        tmp_path, "listops", "nystrom", 1, 0.60, config=config, data=generated, finished="2025-01-02"
    )
    for task in ("text", "retrieval", "image", "pathfinder"):
        write_summary(tmp_path, task, "nystrom", 0, 0.50)
    out = tmp_path / "results"
    assert main(["--runs", str(tmp_path), "--out", str(out)]) == 0
    text = (out / "lra_table.md").read_text()
    assert table_row(text, "nystrom")[0] == "38.00 (1)"  # the release run alone, averaged over five tasks
    assert table_row(text, "nystrom")[-1] == f"{(38 + 4 * 50) / 5:.2f}"
    marked = table_row(text, "nystrom (dataset=listops-generated, generated data)")
    assert marked[0] == "60.00 (1)" and marked[-1] == "none: not the LRA data"
    assert "not comparable with the published numbers" in text
