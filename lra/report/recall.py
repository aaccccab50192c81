"""The recall diagnostics in the report (docs/diagnostics.md): Zoology's Figure 2 and MAD's table, from
the completed runs of the recall tasks (``task.generator``).

- ``recall_vs_state``: Zoology's Figure 2 (Arora et al. 2023; HazyResearch/zoology
  ``zoology/analysis/paper/zoology_paper/zoology_figure2.py``): MQAR accuracy against the state size
  each layer carries (``model/state_size``, log scale), one panel per sequence length and number of
  pairs, one line per mixer in its attention colour; each point the best run at that state size (the
  source's maximum over its learning rates).
- ``mad_table``: MAD's score (Poli et al. 2024; athms/mad-lab ``mad/analysis.py`` L120-201): per task and
  mixer, the best run of each difficulty level (the source's maximum over its learning-rate and
  weight-decay sweep), averaged over the levels.

Causal and non-causal runs (``model.causal``) are separate settings: never in one panel or one table.
A line or row is a mixer: ``Run.label`` (``lra.report.configurations``) with what the sources sweep
or plot on the x axis left out (learning rate, weight decay, width, the attention's budget option;
``bidirectional`` under causal) and the task's own options (they make the panels and levels).
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import attention_zoo
from lra.provenance import markdown_table
from lra.report.configurations import label_configurations
from lra.report.panels import TITLE_SIZE, legend_below_panels, panel_grid
from lra.report.paper_layouts import FigureSpec, ReportInput
from lra.report.runs import Run
from lra.results.marker_labels import place_labels
from lra.results.plotting import attention_color, log_axis
from lra.results.summary_json import STATE_SIZE

if TYPE_CHECKING:
    from matplotlib.figure import Figure

ACCURACY = "test/acc"
# What a mixer's line or row leaves out: the sources' sweeps, the x axis, and the task's options.
SWEPT = ("task.", "model.dim", "model.causal", "features", "trainer.max_steps", "seed")
MAD_TASKS = (
    "in_context_recall", "fuzzy_in_context_recall", "noisy_in_context_recall",
    "selective_copying", "compression", "memorization",
)  # fmt: skip
SETTINGS = {True: "causal", False: "non-causal"}
MARKER_AREA = 64.0  # points²: a single-state-size mixer's marker
OVERLAP = (0.04, 3.0)  # markers closer than this (log10 state size, accuracy points) overlap


def is_recall(run: Run) -> bool:
    return (run.config.get("task") or {}).get("generator") is not None


def apart(runs: Sequence[Run]) -> tuple[list[Run], list[Run]]:
    """(the LRA runs, the recall runs) of ``runs``: the LRA tables and papers' sections show only the
    first, the recall figure and MAD's table only the second."""
    return [run for run in runs if not is_recall(run)], [run for run in runs if is_recall(run)]


def setting(run: Run) -> str:
    """``causal`` or ``non-causal``: the run's ``model.causal``."""
    return SETTINGS[bool((run.config.get("model") or {}).get("causal", False))]


def unlabelled(run: Run) -> set[str]:
    """The attention options a mixer's label leaves out: its budget (the x axis) and, under causal,
    ``bidirectional`` (the setting says it)."""
    known = run.attention in attention_zoo.available()
    option = attention_zoo.spec(run.attention).budget_option if known else None
    return {f"attention.{option}"} | ({"attention.bidirectional"} if setting(run) == "causal" else set())


def mixer_runs(runs: Sequence[Run]) -> list[Run]:
    """The completed recall runs, each labelled as a mixer (module docstring)."""
    chosen = [
        run
        for run in runs
        if is_recall(run) and run.status == "completed" and run.value(ACCURACY) is not None
    ]
    stripped = []
    for run in chosen:
        left_out = unlabelled(run)
        kept = {
            key: value
            for key, value in run.settings.items()
            if not key.startswith(SWEPT) and key not in left_out
        }
        stripped.append(replace(
            run, settings=kept, configuration=repr(sorted(kept.items())),
            label_keys=tuple(key for key in run.label_keys if key not in left_out),
            task=f"recall, {setting(run)}",  # one labelling a setting: a mixer keeps its name across tasks
        ))  # fmt: skip
    return [
        replace(labelled, task=run.task)
        for labelled, run in zip(label_configurations(stripped), chosen, strict=True)
    ]


def generator(run: Run) -> dict:
    return dict(run.config["task"]["generator"])


def best_by(runs: Sequence[Run], key) -> dict:
    """key(run) -> the best ``ACCURACY`` among the runs that share it."""
    best: dict = {}
    for run in runs:
        best[key(run)] = max(best.get(key(run), 0.0), run.value(ACCURACY))
    return best


def recall_vs_state(runs: Sequence[Run]) -> Figure | None:
    """Zoology's Figure 2 of the MQAR runs that record a state size; None when there are none. A mixer
    with one state size is a marker with its label beside it (``place_labels``); lines, or a panel
    without room for every label, take one legend below the panels."""
    mqar = [run for run in mixer_runs(runs) if run.task == "mqar" and run.value(STATE_SIZE)]
    if not mqar:
        return None
    panels: dict[tuple, list[Run]] = defaultdict(list)
    for run in mqar:
        options = generator(run)
        panels[(setting(run), options["input_seq_len"], options["num_kv_pairs"])].append(run)
    order = sorted(panels, key=lambda panel: (panel[0] != "causal", panel[1], panel[2]))
    fig, axes = panel_grid(len(order), "MQAR accuracy against the state size per layer (Zoology, Figure 2)")
    points: list[list[tuple[str, float, float]]] = []  # per panel: (label, size, accuracy %) of each marker
    for panel, ax in zip(order, axes, strict=True):
        best = best_by(panels[panel], lambda run: (run.label, run.value(STATE_SIZE)))
        points.append([])
        drawn: list[tuple[float, float]] = []  # (log10 state size, accuracy) of the markers so far
        for label in sorted({label for label, _ in best}):
            line = sorted((size, 100 * accuracy) for (name, size), accuracy in best.items() if name == label)
            if len(line) == 1:  # a marker, its label beside it; one over others is a smaller disc
                here = (math.log10(line[0][0]), line[0][1])  # inside them, so that every one shows
                under = sum(abs(here[0] - x) < OVERLAP[0] and abs(here[1] - y) < OVERLAP[1] for x, y in drawn)
                area = MARKER_AREA / (1 + under) ** 2
                ax.scatter(*line[0], s=area, color=attention_color(label), label=label, zorder=3 + under)
                drawn.append(here)
                points[-1].append((label, *line[0]))
            else:
                ax.plot(*zip(*line, strict=True), marker="o", color=attention_color(label), label=label)
        name, length, pairs = panel
        ax.set_title(f"{name}: length {length}, {pairs} pairs", fontsize=TITLE_SIZE)
        ax.set(xlabel="state size per layer (numbers)", ylabel="test accuracy (%)", ylim=(-3, 103))
        log_axis(ax, "x")
        ax.grid(True, which="both", alpha=0.3)
    lines = any(ax.get_lines() for ax in axes)
    if lines or not all(place_labels(fig, ax, marks) for ax, marks in zip(axes, points, strict=True)):
        for ax in axes:  # a label either beside its marker in every panel, or in the legend
            for text in list(ax.texts):
                text.remove()
        legend_below_panels(fig, axes)
    return fig


def mad_scores(runs: Sequence[Run]) -> dict[tuple[str, str], dict[str, tuple[float, int]]]:
    """(setting, mixer) -> MAD task -> (score, levels): the mean over a task's levels of the best run of
    each level (a level: the generator's options and the training set's size)."""
    best = best_by(
        [run for run in mixer_runs(runs) if run.task in MAD_TASKS],
        lambda run: (setting(run), run.label, run.task, repr(sorted(generator(run).items())),
                     run.config["task"]["train_examples"]),
    )  # fmt: skip
    levels: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for (where, label, task, *_), accuracy in best.items():
        levels[(where, label)][task].append(accuracy)
    return {
        mixer: {task: (statistics.mean(values), len(values)) for task, values in tasks.items()}
        for mixer, tasks in levels.items()
    }


def mad_table(runs: Sequence[Run]) -> str:
    """MAD's table per setting (markdown): a row per mixer, a column per task, each cell the score in %
    and the number of levels it averages; "" when no MAD task ran."""
    scores = mad_scores(runs)
    blocks = []
    for name in SETTINGS.values():
        rows = [
            [
                label,
                *(
                    f"{100 * cells[task][0]:.1f} ({cells[task][1]})" if task in cells else "—"
                    for task in MAD_TASKS
                ),
            ]
            for (where, label), cells in sorted(scores.items())
            if where == name
        ]
        if rows:
            blocks.append(f"**{name}**\n\n" + markdown_table(["mixer", *MAD_TASKS], rows))
    return "\n\n".join(blocks)


RECALL_VS_STATE = FigureSpec(
    "recall_vs_state",
    "## Recall against state size (Zoology, Figure 2)",
    lambda report: recall_vs_state(report.recall),
    "No completed MQAR run records a state size.",
    lambda report: (
        "One panel per setting (causal or non-causal), length and number of pairs; each point "
        "is the best test accuracy at that state size (`model/state_size`), over learning rates and seeds."
    ),
)


def recall_blocks(report: ReportInput) -> list[str]:
    """MAD's table under its heading, when a MAD task ran."""
    table = mad_table(report.recall)
    if not table:
        return []
    return [
        "## MAD scores (%)",
        "Per task and mixer, the mean over the difficulty levels that ran (their number in brackets) of "
        "each level's best test accuracy, over learning rates, weight decays and seeds (MAD's score).",
        table,
    ]
