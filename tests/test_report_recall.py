"""The recall diagnostics of ``python -m lra.report`` (lra/report/recall.py): Zoology's Figure 2 draws
every MQAR run, one line per mixer, causal and non-causal apart, its text inside the canvas; MAD's table
averages each task's levels of their best runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import compose_config
from helpers.report_summaries import write_summary
from omegaconf import OmegaConf

import attention_zoo
from lra.job.attention_checks import state_size
from lra.report.cli import main
from lra.report.configurations import label_configurations
from lra.report.recall import mad_scores, mixer_runs, recall_vs_state
from lra.report.runs import find_runs
from lra.results.plotting import agg_pyplot, text_problems

# name, overrides, test accuracy: lr sweeps (the best counts), widths and budgets (the x axis)
RUNS = [
    ("std-64-lr3", ["attention=standard", "model.causal=true", "task.lr=1e-3"], 0.91),
    ("std-64-lr4", ["attention=standard", "model.causal=true", "task.lr=1e-4"], 0.40),
    ("std-128", ["attention=standard", "model.causal=true", "model.dim=128"], 0.99),
    ("s4d-16", ["attention=s4d", "model.causal=true", "attention.d_state=16"], 0.20),
    ("s4d-64", ["attention=s4d", "model.causal=true", "attention.d_state=64"], 0.35),
    ("nys-16", ["attention=nystrom", "attention.num_landmarks=16"], 0.15),
    ("nys-32", ["attention=nystrom", "attention.num_landmarks=32"], 0.25),
    ("std-long", ["attention=standard", "model.causal=true", "task.generator.input_seq_len=128",
                  "task.generator.num_kv_pairs=16"], 0.60),
]  # fmt: skip
MAD_RUNS = [  # task, level overrides, lr, accuracy
    ("in_context_recall", [], "1e-3", 0.8),
    ("in_context_recall", [], "1e-4", 0.6),
    ("in_context_recall", ["task.generator.vocab_size=32"], "1e-3", 0.4),
    ("in_context_recall", ["task.train_examples=800"], "1e-3", 0.3),
    ("selective_copying", [], "1e-3", 0.5),
]


def write(root: Path, name: str, overrides: list[str], acc: float) -> None:
    cfg = compose_config(overrides)
    config = OmegaConf.to_container(cfg, resolve=True)
    write_summary(
        root / name, cfg.task.name, cfg.attention.name, 0, acc, config=config, schema=3,
        data={"set": cfg.task.name, "source": "recall generator"},
        metrics={"model/state_size": state_size(cfg)},
    )  # fmt: skip


@pytest.fixture(scope="module")
def recall_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("recall")
    for name, overrides, acc in RUNS:
        write(root, name, ["task=mqar", *overrides], acc)
    for index, (task, level, lr, acc) in enumerate(MAD_RUNS):
        write(
            root,
            f"mad-{index}",
            [f"task={task}", "attention=standard", "model.causal=true", f"task.lr={lr}", *level],
            acc,
        )
    return root


def test_zoology_figure_draws_every_mqar_run_one_line_per_mixer_each_setting_apart(recall_root: Path):
    runs = label_configurations(find_runs([recall_root]))
    figure = recall_vs_state(runs)
    titles = [ax.get_title() for ax in figure.axes]
    assert titles == [
        "causal: length 64, 8 pairs",
        "causal: length 128, 16 pairs",
        "non-causal: length 64, 8 pairs",
    ]
    drawn = {ax.get_title(): drawn_points(ax) for ax in figure.axes}
    size = lambda name, **options: attention_zoo.state_size(name, dim=options.pop("dim", 64), **options)  # noqa: E731
    assert drawn["causal: length 64, 8 pairs"] == {
        "standard": [(size("standard", seq_len=64), 91.0), (size("standard", seq_len=64, dim=128), 99.0)],
        "s4d": [(size("s4d", seq_len=64, d_state=16, bidirectional=False), 20.0),
                (size("s4d", seq_len=64, d_state=64, bidirectional=False), 35.0)],
    }  # fmt: skip
    assert drawn["causal: length 128, 16 pairs"] == {"standard": [(size("standard", seq_len=128), 60.0)]}
    assert drawn["non-causal: length 64, 8 pairs"] == {
        "nystrom": [(size("nystrom", seq_len=64, num_landmarks=16), 15.0),
                    (size("nystrom", seq_len=64, num_landmarks=32), 25.0)],
    }  # fmt: skip
    assert text_problems(figure) == []
    assert figure.legends and not any(ax.texts for ax in figure.axes)  # lines: every label in the legend
    agg_pyplot().close(figure)


def drawn_points(ax) -> dict[str, list[tuple[float, float]]]:
    """label -> its (state size, accuracy %) points: a line's, or a single marker's."""
    lines = {
        line.get_label(): list(zip(line.get_xdata(), line.get_ydata(), strict=True))
        for line in ax.get_lines()
    }
    marks = {marks.get_label(): [tuple(point) for point in marks.get_offsets()] for marks in ax.collections}
    return lines | marks


def test_a_mixer_with_one_state_size_is_a_marker_with_its_label_beside_it(recall_root: Path):
    runs = [run for run in label_configurations(find_runs([recall_root])) if run.task == "mqar"]
    one_each = [run for run in runs if run.config["task"]["generator"]["input_seq_len"] == 128]
    figure = recall_vs_state(one_each)
    [ax] = figure.axes
    assert set(drawn_points(ax)) == {"standard"} and not ax.get_lines()
    assert [text.get_text() for text in ax.texts] == ["standard"] and not figure.legends
    assert text_problems(figure) == []
    agg_pyplot().close(figure)


def test_mad_scores_average_the_best_run_of_each_level(recall_root: Path):
    scores = mad_scores(label_configurations(find_runs([recall_root])))
    assert scores == {
        ("causal", "standard"): {
            "in_context_recall": (pytest.approx((0.8 + 0.4 + 0.3) / 3), 3), "selective_copying": (0.5, 1),
        },
    }  # fmt: skip
    assert {run.label for run in mixer_runs(find_runs([recall_root]))} == {"standard", "s4d", "nystrom"}


def test_the_report_draws_the_figure_and_the_table(recall_root: Path, tmp_path: Path):
    out = tmp_path / "report"
    assert main(["--runs", str(recall_root), "--out", str(out)]) == 0
    text = (out / "lra_table.md").read_text()
    assert "![Recall against state size (Zoology, Figure 2)](recall_vs_state.png)" in text
    assert (out / "recall_vs_state.png").is_file()
    table = text.split("## MAD scores (%)")[1]
    assert "**causal**" in table and "**non-causal**" not in table
    assert "| standard | 50.0 (3) | — | — | 50.0 (1) | — | — |" in table
