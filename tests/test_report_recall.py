"""The recall diagnostics of ``python -m lra.report`` (lra/report/recall*.py), on real composed configs:
each configuration is picked at its best learning rate by validation, with the rate named, the runs
counted and an edge flagged; runs of another vocabulary, head count, step count or preset are never
merged; MAD's score averages only MAD's levels of one configuration; a mixer is a line over state sizes."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import compose_config
from helpers.report_summaries import write_summary
from omegaconf import OmegaConf

from lra.job.attention_checks import state_size
from lra.job.train import run as train
from lra.report.cli import main
from lra.report.recall import mqar_picks, recall_vs_state
from lra.report.runs import find_runs
from lra.results.plotting import agg_pyplot, text_problems

TIER = ["experiment=diagnostics_cpu"]
RATES = ["1e-3", "3.1623e-3", "1e-2", "3.1623e-2"]


def write(
    root: Path,
    name: str,
    overrides: list[str],
    val: float,
    test: float,
    seed: int = 0,
    steps: int | None = None,
) -> None:
    """A completed run's summary.json with the config ``python -m lra OVERRIDES`` composes."""
    cfg = compose_config([*overrides, f"seed={seed}"])
    config = OmegaConf.to_container(cfg, resolve=True)
    write_summary(
        root / name,
        cfg.task.name,
        cfg.attention.name,
        seed,
        test,
        config=config,
        schema=3,
        data={"set": cfg.task.name, "source": "recall generator"},
        metrics={
            "model/state_size": state_size(cfg),
            "val/acc_best": val,
            "train/steps": steps or cfg.trainer.max_steps,
        },
        preset=next((o.split("=")[1] for o in overrides if o.startswith("experiment=")), None),
    )


def report(root: Path, out: Path) -> str:
    assert main(["--runs", str(root), "--out", str(out)]) == 0
    return (out / "lra_table.md").read_text()


def section(text: str, heading: str) -> str:
    return text.split(heading, 1)[1].split("\n## ", 1)[0]


def rows(table: str, first: str) -> list[list[str]]:
    """The markdown rows of ``table`` whose first cell is ``first``, as cells."""
    found = [[cell.strip() for cell in line.strip("|").split("|")] for line in table.splitlines()]
    return [cells for cells in found if cells and cells[0] == first]


@pytest.fixture(scope="module")
def tier_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tier's standard over its four rates (best by validation at 1e-2, not by test), mamba best at
    the highest rate, both at two state sizes; and a standard run of another vocabulary and heads."""
    root = tmp_path_factory.mktemp("tier")
    for rate, val, test in zip(RATES, (0.50, 0.70, 0.90, 0.60), (0.55, 0.95, 0.88, 0.62), strict=True):
        for features, gain in (("16", 0.0), ("32", 0.05)):
            write(
                root,
                f"std-{rate}-{features}",
                [*TIER, "attention=standard", f"task.lr={rate}", f"features={features}"],
                val + gain,
                test + gain,
            )
    for rate, val in zip(RATES, (0.10, 0.20, 0.30, 0.90), strict=True):
        for features in ("16", "32"):
            write(
                root,
                f"mamba-{rate}-{features}",
                [*TIER, "attention=mamba", f"task.lr={rate}", f"features={features}"],
                val,
                val,
            )
    write(
        root,
        "std-8192",
        [
            *TIER,
            "attention=standard",
            "task.generator.vocab_size=8192",
            "model.num_heads=2",
            "trainer.max_steps=10",
        ],
        0.0006,
        0.0006,
    )
    return root


def test_the_best_rate_by_validation_is_picked_named_and_counted(tier_root: Path, tmp_path: Path):
    table = section(report(tier_root, tmp_path), "## MQAR: every point of the figure")
    standard = [row for row in rows(table, "causal") if row[2] == "standard"]
    assert [(row[3], row[5], row[7], row[8], row[9]) for row in standard] == [
        (
            "dim=64",
            "88.00",
            "lr=0.01",
            "best of 4 rates",
            "",
        ),  # 1e-2 has the best validation, 3.16e-3 the best test
        ("dim=128", "93.00", "lr=0.01", "best of 4 rates", ""),
    ]


def test_a_best_at_the_edge_of_the_sweep_is_flagged_in_the_table_and_the_figure(tier_root: Path, tmp_path):
    table = section(report(tier_root, tmp_path), "## MQAR: every point of the figure")
    mamba = [row for row in rows(table, "causal") if row[2] == "mamba"]
    assert [(row[3], row[7], row[9]) for row in mamba] == [
        ("d_state=16", "lr=0.031623", "† highest lr swept"),
        ("d_state=32", "lr=0.031623", "† highest lr swept"),
    ]
    figure = recall_vs_state(find_runs([tier_root]))
    [ax] = figure.axes
    hollow = [line for line in ax.get_lines() if line.get_markerfacecolor() == "white"]
    # mamba's two picks, and the one-rate run of another vocabulary
    assert sorted(list(line.get_ydata()) for line in hollow) == [[pytest.approx(0.06)], [90.0, 90.0]]
    agg_pyplot().close(figure)


def test_a_run_of_another_vocabulary_and_head_count_stays_its_own_point_and_row(tier_root: Path, tmp_path):
    labelled = mqar_picks(find_runs([tier_root]))
    assert sorted({label for _, label in labelled}) == [
        "mamba",
        "standard",
        "standard (num_heads=2, vocab_size=8192, max_steps=10)",
    ]
    table = section(report(tier_root, tmp_path), "## MQAR: every point of the figure")
    other = [row for row in rows(table, "causal") if "vocab_size=8192" in row[2]]
    assert [(row[1], row[5], row[8], row[9]) for row in other] == [
        ("64 tokens, 8 pairs, 10 steps", "0.06", "best of 1 rate", "† one lr only")
    ]
    figure = recall_vs_state(find_runs([tier_root]))
    legend = [text.get_text() for text in figure.legends[0].get_texts()]
    assert "standard (num_heads=2, vocab_size=8192, max_steps=10)" in legend and "standard" in legend
    assert text_problems(figure) == []
    agg_pyplot().close(figure)


def test_the_figure_is_a_line_per_mixer_over_state_size_with_a_chance_line(tier_root: Path):
    figure = recall_vs_state(find_runs([tier_root]))
    [ax] = figure.axes
    assert ax.get_title() == "causal: length 64, 8 pairs, steps: see labels"
    lines = {
        line.get_label(): list(line.get_xdata()) for line in ax.get_lines() if line.get_label()[0] != "_"
    }
    assert lines["standard"] == [8192, 16384] and lines["mamba"] == [2048, 4096]
    chance = [line for line in ax.get_lines() if line.get_linestyle() == "--"]
    assert [line.get_ydata()[0] for line in chance] == [12.5]
    agg_pyplot().close(figure)


def test_a_mad_score_averages_only_the_levels_of_one_configuration(tmp_path: Path):
    root = tmp_path / "runs"
    mad = ["experiment=mad", "attention=standard"]
    for rate, val in (("1e-4", 0.5), ("5e-4", 0.9), ("1e-3", 0.7)):  # the baseline's sweep: 5e-4 wins
        write(root, f"mad-{rate}", [*mad, f"task.lr={rate}"], val, val)
    write(root, "mad-vocab32", [*mad, "task.generator.vocab_size=32", "task.lr=5e-4"], 0.4, 0.4)
    write(
        root,
        "plain",
        ["task=in_context_recall", "attention=standard", "model.causal=true", "trainer.max_steps=10"],
        0.2,
        0.2,
    )
    write(
        root,
        "tier",
        ["experiment=diagnostics_cpu_mad", "attention=standard", "task=in_context_recall"],
        0.98,
        0.98,
    )
    write(
        root,
        "tier-compression",  # at MAD's length (32): the tier's cell differs only in its set
        ["experiment=diagnostics_cpu_mad", "attention=standard", "task=compression"],
        0.9,
        0.9,
    )
    text = report(root, tmp_path / "out")
    table = section(text, "## MAD scores (%)")
    cells = {
        (row[0], row[1]): (row[2], row[6])  # in_context_recall, compression
        for label in ("mad", "diagnostics_cpu_mad")
        for row in rows(table, f"standard (experiment={label})")
    }
    assert cells == {  # (0.9 + 0.4) / 2: the levels of experiment=mad, not the other presets' runs
        ("standard (experiment=mad)", "MAD levels"): ("65.0† (2: baseline, vocab_size=32)", "—"),
        (
            "standard (experiment=diagnostics_cpu_mad)",
            "not MAD's levels: num_train_examples=6400, fresh batches",  # what both its cells share
        ): ("98.00† (seq_len=64)", "90.00†"),
    }
    assert [row[1:3] for row in rows(table, "standard (no preset)")] == [["MAD levels", "20.0 (1: baseline)"]]
    picks = {  # each pick behind a score: its level, rate, sweep and edge
        (row[2], row[3]): [row[5], *row[7:]] for row in rows(section(text, "## MAD: every pick"), "causal")
    }
    assert picks[("baseline", "standard (experiment=mad)")] == [
        "90.00", "lr=0.0005, weight_decay=0", "best of 3 (lr × weight_decay)", "† one weight_decay only"
    ]  # fmt: skip
    assert {level for level, mixer in picks if "diagnostics_cpu_mad" in mixer} == {
        "not a level: seq_len=64",  # in_context_recall at 64 tokens; compression at MAD's own length
        "not a level",
    }  # what both share is said once, above the table
    said = "Every pick here that is no MAD level has num_train_examples=6400, fresh batches;"
    assert said in section(text, "## MAD: every pick")
    assert picks[("vocab_size=32", "standard (experiment=mad)")][1:3] == [
        "lr=0.0005, weight_decay=0",
        "best of 1 (lr × weight_decay)",
    ]


@pytest.mark.slow
def test_a_label_shows_the_steps_that_ran_not_an_overridden_default(tmp_path: Path):
    """Real runs: non-causal nystrom and causal standard with trainer.max_steps=3 (their task.max_steps
    are 3000 and 1200): one row each, no step count in a label, and --compare pairs them."""
    root = tmp_path / "runs"
    for attention, seed in (("nystrom", 0), ("nystrom", 1), ("standard", 0), ("standard", 1)):
        overrides = [
            *TIER,
            f"attention={attention}",
            "trainer.max_steps=3",
            "task.eval_every=3",
            "task.test_examples=64",
            f"seed={seed}",
            "logger=none",
            "features=16",
        ]
        summary = train(compose_config(overrides), root / f"{attention}-{seed}")
        assert summary["status"] == "completed", summary["error"]
    text = report(root, tmp_path / "out")
    assert "max_steps=3000" not in text and "max_steps=1200" not in text
    table = section(text, "## MQAR: every point of the figure")
    assert {(row[0], row[1], row[2]) for row in rows(table, "non-causal") + rows(table, "causal")} == {
        ("non-causal", "64 tokens, 8 pairs, 3 steps", "nystrom"),
        ("causal", "64 tokens, 8 pairs, 3 steps", "standard"),
    }
    assert (
        main(["--runs", str(root), "--out", str(tmp_path / "cmp"), "--compare", "nystrom", "standard"]) == 0
    )
