"""Confidence intervals over seeds (Student's t), ``python -m lra.report --compare A B``, and model sizes
beside LRA's rule."""

from __future__ import annotations

import statistics
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.report_summaries import write_summary

from lra.report.cli import main
from lra.report.compare import CompareError
from lra.report.intervals import interval, t_critical

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(("df", "printed"), [(1, 12.706), (2, 4.303), (4, 2.776), (9, 2.262), (30, 2.042)])
def test_t_critical_values_match_the_printed_tables(df, printed):
    assert t_critical(df) == pytest.approx(printed, abs=5e-4)


def test_the_interval_of_three_seeds_is_the_mean_plus_minus_t_s_over_root_n():
    low, high = interval([30.0, 35.0, 40.0])
    assert (low + high) / 2 == pytest.approx(35.0)
    assert high - 35.0 == pytest.approx(t_critical(2) * 5 / 3**0.5)
    assert interval([30.0]) is None


def write_pairs(root: Path) -> None:
    """nystrom and standard on listops, seeds 0-2 for nystrom and 0-1 (and 3) for standard; text: nystrom
    only; image: one shared seed."""
    for seed, (mine, theirs) in enumerate(((0.40, 0.38), (0.41, 0.42), (0.45, 0.41))):
        write_summary(root, "listops", "nystrom", seed, mine)
        if seed < 2:
            write_summary(root, "listops", "standard", seed, theirs)
    write_summary(root, "listops", "standard", 3, 0.5)
    write_summary(root, "text", "nystrom", 0, 0.6)
    write_summary(root, "image", "nystrom", 0, 0.42)
    write_summary(root, "image", "standard", 0, 0.40)


def test_compare_gives_the_paired_difference_per_task_over_the_shared_seeds(tmp_path: Path, capsys):
    write_pairs(tmp_path)
    assert main(["--runs", str(tmp_path), "--compare", "nystrom", "standard"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    differences = [2.0, -1.0]  # seeds 0 and 1: 40 - 38, 41 - 42
    low, high = interval(differences)
    mean = statistics.fmean(differences)
    assert lines == [
        f"nystrom − standard on listops: +{mean:.2f} [{low:.2f}, {high:.2f}] over 2 seeds".replace("-", "−"),
        "nystrom − standard on image: +2.00 over 1 seed (no interval from one seed)",
    ]


def test_a_bare_attention_name_stands_for_its_one_variant_and_several_must_be_named(tmp_path: Path, capsys):
    def s4d(d_state: int) -> dict:
        return {"attention": {"name": "s4d", "d_state": d_state}}

    for seed in (0, 1):
        write_summary(tmp_path, "listops", "s4d", seed, 0.40 + seed / 100, config=s4d(16))
        write_summary(tmp_path, "listops", "standard", seed, 0.38)
    assert main(["--runs", str(tmp_path), "--compare", "s4d", "standard"]) == 0
    assert capsys.readouterr().out.startswith("s4d (d_state=16) − standard on listops: +2.50 [")
    write_summary(tmp_path, "listops", "s4d", 2, 0.41, config=s4d(32))
    with pytest.raises(CompareError) as error:
        main(["--runs", str(tmp_path), "--compare", "s4d", "standard"])
    several = "s4d (d_state=16), s4d (d_state=32)"
    assert str(error.value) == f"--compare: 's4d' ran as several variants; name one: {several}"


def test_compare_of_a_variant_without_runs_is_one_line_naming_the_variants(tmp_path: Path):
    write_pairs(tmp_path)
    result = subprocess.run(
        [sys.executable, "-m", "lra.report", "--runs", str(tmp_path), "--compare", "nystrm", "standard"],
        cwd=REPO, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode != 0
    assert (
        result.stderr.strip()
        == "error: --compare: no completed run of 'nystrm'; the runs' variants: nystrom, standard"
    )


def test_the_size_table_gives_the_mixers_share_and_flags_models_over_ten_percent_above_standard(tmp_path):
    sizes = {"standard": (100_000, 33_000), "nystrom": (109_000, 42_000), "linformer": (125_000, 58_000)}
    for attention, (total, mixer) in sizes.items():
        metrics = {"model/params": total, "model/mixer_params": mixer}
        write_summary(tmp_path, "listops", attention, 0, 0.4, metrics=metrics)
    write_summary(tmp_path, "text", "linformer", 0, 0.6, metrics={"model/params": 90_000})  # no mixer count
    out = tmp_path / "out"
    assert main(["--runs", str(tmp_path), "--out", str(out)]) == 0
    table = (out / "lra_table.md").read_text().split("## Model size (parameters)")[1].split("\n## ")[0]
    assert "| standard | 100,000 (mixer 33%) | — |" in table
    assert "| nystrom | 109,000 (mixer 39%) | — |" in table  # 9% larger: within the rule
    assert "| linformer | 125,000 (mixer 46%) ⚑ +25% over standard | 90,000 |" in table
