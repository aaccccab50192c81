"""Every failure says why, where the user looks: reasons cut between words (``lra.one_line``), the
final table's ``why`` column or its one shared reason, and the report's table of failed jobs."""

from __future__ import annotations

import pytest
from conftest import tiny_data_overrides
from test_resume import lra

from lra.one_line import ELLIPSIS, one_line
from lra.report.runs import Run
from lra.report.tables import failed_section
from lra.results.summary_tables import WHY_WIDTH, format_table

WARMUP = (
    "task.warmup_steps=1000 exceeds trainer.max_steps=6: the one_cycle schedule needs its peak within the run"
)
OTHER = "attention 'nystrom': conv_kernel_size must be an odd integer"


@pytest.mark.parametrize("width", range(len(WARMUP.split()[0]) + 1, len(WARMUP) + 2))
def test_a_reason_is_cut_after_a_whole_word_with_an_ellipsis(width):
    cut = one_line(WARMUP, width)
    assert len(cut) <= width
    if cut == WARMUP:
        assert width >= len(WARMUP)
        return
    kept = cut.removesuffix(ELLIPSIS)
    assert cut.endswith(ELLIPSIS) and kept and WARMUP.startswith(kept)
    assert WARMUP[len(kept)] in " :"  # the next character ends a word: none is cut in half
    assert kept[-1] not in " ,.;:"


def test_one_line_joins_lines_and_cuts_a_first_word_longer_than_the_width():
    assert one_line("RuntimeError: boom\n  at step 3", 80) == "RuntimeError: boom at step 3"
    assert one_line("/a/very/long/path/without/spaces", 10) == f"/a/very/l{ELLIPSIS}"
    assert one_line("no data under /tmp/data. Prepare it with: python -m data_prep", 30) == (
        f"no data under /tmp/data{ELLIPSIS}"  # no stop or colon before the ellipsis
    )


def summary(attention: str, status: str = "completed", error: str | None = None) -> dict:
    metrics = {"val/acc_best": 0.5, "test/acc": 0.25} if status == "completed" else {}
    return {"task": "listops", "attention": attention, "seed": 0, "status": status, "error": error,
            "metrics": metrics, "options": {}}  # fmt: skip


def test_the_table_says_why_each_job_did_not_complete_in_its_last_column():
    table = format_table(
        [
            summary("nystrom"),
            summary("linformer", "failed", WARMUP),
            summary("performer", "nan", "loss is NaN"),
        ]
    )
    header, _, *rows = table.splitlines()
    assert header.split()[-1] == "why"
    assert rows[0].endswith(" -") and rows[2].endswith(" loss is NaN")
    why = rows[1][header.index("why") :]
    assert why == one_line(WARMUP, WHY_WIDTH) and why.endswith(f"max_steps=6: the{ELLIPSIS}")
    assert "why" not in format_table([summary("nystrom")])  # nothing to explain: no column


def test_one_reason_shared_by_every_job_stands_once_above_the_table():
    jobs = [summary("nystrom", "failed", WARMUP), summary("linformer", "failed", WARMUP)]
    first, header, _, *rows = format_table(jobs).splitlines()
    assert first == f"All 2 jobs failed: {WARMUP}"
    assert "why" not in header and WARMUP not in "\n".join(rows)
    mixed = format_table([*jobs, summary("performer", "failed", OTHER)])
    assert not mixed.startswith("All") and mixed.splitlines()[0].split()[-1] == "why"


def test_the_reports_table_of_failed_jobs_cuts_errors_between_words(tmp_path):
    error = " ".join(["the offline W&B run could not be synced"] * 10)  # 399 characters
    run = Run(tmp_path / "summary.json", "text", "skyformer", 0, "failed", error, {}, "", "", "")
    (row,) = [line for line in failed_section([run]).splitlines() if "skyformer" in line]
    cell = row.split(" | ")[4]
    kept = cell.removesuffix(ELLIPSIS)
    assert cell.endswith(ELLIPSIS) and len(cell) <= 200 and error.startswith(kept) and error[len(kept)] == " "


@pytest.mark.slow  # two sweeps of python -m lra in subprocesses
def test_a_failing_sweep_says_why_in_its_final_table(data_root, tmp_path):
    tiny = tiny_data_overrides(data_root)
    mixed = lra(["-m", "attention=nystrom", "attention.conv_kernel_size=3,4", *tiny], tmp_path)
    sweep_table = mixed.stdout.split("\nSweep ")[-1].splitlines()
    assert mixed.returncode == 1 and sweep_table[1].split()[-1] == "why", mixed.stdout[-3000:]
    assert sweep_table[3].endswith(" -") and "conv_kernel_size must be an odd" in sweep_table[4]
    assert "1 of 2 jobs did not complete" in mixed.stderr

    one_cycle = ["protocol.schedule=one_cycle", "task.warmup_steps=1000"]
    every = lra(["-m", "attention=nystrom,linformer", *one_cycle, *tiny], tmp_path)
    first_lines = every.stdout.split("\nSweep ")[-1].splitlines()
    assert every.returncode == 1 and first_lines[1].startswith("All 2 jobs refused: task.warmup_steps=1000")
    assert first_lines[1].endswith("needs its peak within the run") and "why" not in first_lines[2]
