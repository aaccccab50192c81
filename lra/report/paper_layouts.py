"""The papers' artefacts the report reproduces, one entry of ``PAPERS`` per paper (``--paper NAME``):
its tables in the paper's layout with ours beside the published figures, and its figures.

- ``skyformer``: Table 1 (accuracy), Table 2 (hours and peak GB per task), Figure 2 (validation
  accuracy against training time).
- ``nystromformer``: Table 3 (accuracy). Its Table 1 (one layer's memory and time) is a benchmark:
  ``python -m lra.bench efficiency --paper nystromformer-table1``.
- ``lra``: Table 1 (accuracy) and Figure 3 (speed, accuracy and memory in one chart).
- ``ssm``: the LRA rows of S4, S4D-LegS, S5 and Mega beside our runs, as other models at other sizes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lra.provenance import markdown_table
from lra.report import figure3, figures
from lra.report.curves import Curve
from lra.report.runs import Run
from lra.report.tables import other_models_table, paper_accuracy_table, skyformer_cost_tables
from lra.results.published_numbers import (
    LRA_ACCURACY,
    NYSTROMFORMER_ACCURACY,
    SKYFORMER_ACCURACY,
    SSM_ACCURACY,
    PublishedAccuracy,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@dataclass(frozen=True)
class ReportInput:
    """What the papers' sections are made from: the completed LRA runs counted (latest per seed), the
    runs' validation curves and the runs that have none, with the reason; ``recall``: the completed
    runs of the recall tasks, which only the recall figure and MAD's table show."""

    completed: Sequence[Run]
    curves: Sequence[Curve]
    missing_curves: Sequence[tuple[Run, str]]
    recall: Sequence[Run] = ()


@dataclass(frozen=True)
class FigureSpec:
    """A figure file (``stem``.png and .svg) and how to draw it; ``draw`` returns None when the runs
    have nothing to draw, and ``absent`` then says why in the report; ``note``: markdown under it."""

    stem: str
    caption: str
    draw: Callable[[ReportInput], Figure | None]
    absent: str
    note: Callable[[ReportInput], str] = lambda report: ""


@dataclass(frozen=True)
class Paper:
    """One paper's section: its title, its tables (markdown blocks) and its figures, in order."""

    title: str
    tables: Callable[[ReportInput], list[str]]
    figures: tuple[FigureSpec, ...] = ()


ACCURACY_NOTE = (
    "Beside ours: {paper}. "
    "Each cell: ours, mean ± sample std over seeds (seeds; how many at chance) / the paper's figure, "
    "in the paper's column order. AVG: the mean of the five task accuracies, as the paper computes it "
    "(ours only where all five tasks have runs) / the AVG the paper prints (each checked to equal the "
    "mean of its five cells to 0.01)."
)


def accuracy_blocks(heading: str, table: PublishedAccuracy) -> Callable[[ReportInput], list[str]]:
    def blocks(report: ReportInput) -> list[str]:
        return [
            heading,
            ACCURACY_NOTE.format(paper=table.paper),
            paper_accuracy_table(report.completed, table),
        ]

    return blocks


def skyformer_tables(report: ReportInput) -> list[str]:
    table1 = accuracy_blocks("### Table 1: test accuracy (%)", SKYFORMER_ACCURACY)(report)
    table2 = ["### Table 2: time and peak memory of a whole run", skyformer_cost_tables(report.completed)]
    return table1 + table2


def missing_curves_note(report: ReportInput) -> str:
    """The runs drawn without a curve, named with the reason (empty when every run has one)."""
    if not report.missing_curves:
        return ""
    rows = [[r.task, r.variant, r.seed, reason, f"`{r.path.parent}`"] for r, reason in report.missing_curves]
    return "Runs without a curve (left out of the figure):\n\n" + markdown_table(
        ["task", "attention", "seed", "why", "run folder"], rows
    )


def draw_curves(report: ReportInput) -> Figure | None:
    return figures.validation_curves(report.curves) if report.curves else None


def draw_lra_chart(report: ReportInput) -> Figure | None:
    return figure3.speed_accuracy_memory(report.completed)


def draw_lra_chart_per_task(report: ReportInput) -> Figure | None:
    complete = set(figure3.complete_variants(report.completed))
    if not {run.variant for run in report.completed} - complete:
        return None
    return figure3.speed_accuracy_memory(report.completed, per_task=True)


OTHER_MODELS_NOTE = (
    "Their authors' published rows for other models, each at its own depth, width, training and "
    "tricks (not the shared encoder every row of ours uses): a reference for where these tasks stand, "
    "not a comparison at equal size. Ours: mean ± sample std over seeds (seeds; how many at chance) "
    "of the test accuracy, runs on the LRA data only. AVG (5): the mean of the five tasks without "
    "Path-X; AVG (6): with Path-X, as these papers print it."
)


def other_model_tables(report: ReportInput) -> list[str]:
    return [
        "### Test accuracy (%) beside S4, S4D-LegS, S5 and Mega",
        OTHER_MODELS_NOTE,
        other_models_table(report.completed, SSM_ACCURACY),
    ]


PAPERS: dict[str, Paper] = {
    "skyformer": Paper(
        "Skyformer paper (Chen et al. 2021)",
        skyformer_tables,
        (
            FigureSpec(
                "skyformer_figure2",
                "### Figure 2: validation accuracy against training time",
                draw_curves,
                "No run has a validation curve (see below).",
                missing_curves_note,
            ),
        ),
    ),
    "nystromformer": Paper(
        "Nyströmformer paper (Xiong et al. 2021)",
        accuracy_blocks("### Table 3: test accuracy (%)", NYSTROMFORMER_ACCURACY),
    ),
    "lra": Paper(
        "LRA paper (Tay et al. 2020)",
        accuracy_blocks("### Table 1: test accuracy (%)", LRA_ACCURACY),
        (
            FigureSpec(
                "lra_figure3",
                "### Figure 3: speed, accuracy and peak memory, over the attentions with all five tasks",
                draw_lra_chart,
                "No attention has runs (with a step time) on all five tasks.",
            ),
            FigureSpec(
                "lra_figure3_per_task",
                "### Figure 3 per task, for the attentions without all five tasks",
                draw_lra_chart_per_task,
                "Every attention has all five tasks.",
            ),
        ),
    ),
    "ssm": Paper(
        "State-space models and Mega, as published (other models at other sizes)", other_model_tables
    ),
}
