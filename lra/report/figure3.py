"""The LRA paper's Figure 3 from the runs: training speed against test accuracy, marker area the peak
memory, one marker per variant (hollow: runs at chance).

- ``per_task=False``: one panel per training protocol over the variants with all five tasks, each point
  the mean over the tasks;
- ``per_task=True``: one panel per task × data set × protocol (``lra.report.panels``).

Speed is relative to the panel's own ``standard`` (steps per second of ``standard`` over the
variant's), so that a preset's runs are never divided by a demo's step time; a panel without
``standard`` on all its tasks gives steps per second. Each marker is labelled beside itself
(``lra.results.marker_labels.place_labels``) where at most ``MAX_LABELS`` share a panel and each label finds
a free place; otherwise that panel's variants are listed in a legend below the panels, keyed by
marker. The axes span the data, never a negative speed.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lra.report.figures import where
from lra.report.panels import (
    ALL_TASKS,
    TITLE_SIZE,
    Panel,
    Style,
    fit_axis,
    group_runs,
    legend_below_panels,
    panel_grid,
    titles,
    variant_styles,
)
from lra.report.runs import Cell, Run, metric_cells
from lra.report.tables import REFERENCE, memory_cells
from lra.results.marker_labels import place_labels
from lra.results.plotting import log_axis
from lra.results.published_numbers import TASKS

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

MAX_LABELS = 8  # more variants in a panel are listed in the legend instead
STEP_MS = "perf/step_ms"


@dataclass(frozen=True)
class Point:
    """A variant's marker: its label, speed, accuracy (%), marker area (points²) and style."""

    label: str
    speed: float
    accuracy: float
    area: float
    style: Style
    at_chance: int


def reference_variant(runs: Sequence[Run]) -> str | None:
    """The variant the panel's speeds are relative to: ``standard`` with its defaults, else another
    ``standard`` variant; None without one."""
    variants = sorted({(run.label != REFERENCE, run.variant) for run in runs if run.attention == REFERENCE})
    return variants[0][1] if variants else None


def panel_points(
    panel: Panel, runs: Sequence[Run], styles: dict[str, Style], max_gb: float, metric: str
) -> tuple[list[Point], bool]:
    """The panel's points (variants with ``metric`` and a step time on each of its tasks) and whether
    their speeds are relative to ``standard``."""
    tasks = list(TASKS) if panel.task == ALL_TASKS else [panel.task]
    accuracy, step_ms = metric_cells(runs, metric, scale=100.0), metric_cells(runs, STEP_MS)
    memory, _ = memory_cells(runs)
    base = step_ms.get(reference_variant(runs) or "", {})
    relative = all(task in base for task in tasks)
    labels = {run.variant: run.label for run in runs}
    points = []
    for variant in sorted(accuracy, key=labels.get):
        if not all(task in accuracy[variant] and task in step_ms.get(variant, {}) for task in tasks):
            continue
        cells: list[Cell] = [accuracy[variant][task] for task in tasks]
        speeds = [(base[t].mean if relative else 1000.0) / step_ms[variant][t].mean for t in tasks]
        gb = [memory[variant][t].mean for t in tasks if t in memory.get(variant, {})]
        flagged = sum(cell.at_chance for cell in cells)
        label = f"{labels[variant]} ({flagged} at chance)" if flagged else labels[variant]
        area = 60 + 400 * (statistics.fmean(gb) / max_gb if gb else 0)
        points.append(Point(label, statistics.fmean(speeds), statistics.fmean(c.mean for c in cells), area,
                            styles[labels[variant]], flagged))  # fmt: skip
    return points, relative


def draw_points(ax: Axes, points: Sequence[Point], relative: bool, ylabel: str) -> None:
    """The panel's markers on axes that span them: a log speed axis where speeds differ tenfold."""
    for point in points:
        color = point.style.color
        ax.scatter(point.speed, point.accuracy, s=point.area, marker=point.style.marker, color=color,
                   alpha=0.5, edgecolors=color, linewidths=1.5, clip_on=False,
                   facecolors="none" if point.at_chance else color)  # fmt: skip
    speeds = [point.speed for point in points]
    if max(speeds) >= 10 * min(speeds):
        log_axis(ax, "x")
    fit_axis(ax, "x", speeds, pad=0.12)
    fit_axis(ax, "y", [point.accuracy for point in points], high=100.0, pad=0.12)
    ax.set(ylabel=ylabel, xlabel=f"training speed ({'× standard' if relative else 'steps/s'})")
    ax.grid(True, alpha=0.3)


def legend_handle(point: Point) -> object:
    from matplotlib.lines import Line2D

    color = point.style.color
    return Line2D([], [], linestyle="none", marker=point.style.marker, markersize=8, color=color, alpha=0.6,
                  markerfacecolor="none" if point.at_chance else color)  # fmt: skip


def label_markers(fig: Figure, panels: Sequence[tuple[Axes, list[Point]]]) -> None:
    """Each panel's labels beside its markers, or (more than ``MAX_LABELS``, or no free place for one)
    its variants in one legend below the panels; retried until every labelled panel has its places."""
    listed = {index for index, (_, points) in enumerate(panels) if len(points) > MAX_LABELS}
    height = fig.get_figheight()
    while True:
        for legend in list(fig.legends):
            legend.remove()
        fig.set_figheight(height)
        if listed:
            handles = {p.label: legend_handle(p) for i in sorted(listed) for p in panels[i][1]}
            legend_below_panels(fig, [ax for ax, _ in panels], handles)
        labelled = [(index, ax, points) for index, (ax, points) in enumerate(panels) if index not in listed]
        failed = {
            index
            for index, ax, points in labelled
            if not place_labels(fig, ax, [(p.label, p.speed, p.accuracy) for p in points])
        }
        if not failed:
            return
        for ax, _ in panels:
            for note in list(ax.texts):
                note.remove()
        listed |= failed


def speed_accuracy_memory(
    runs: Sequence[Run], per_task: bool = False, metric: str = "test/acc"
) -> Figure | None:
    """The LRA paper's Figure 3 (module docstring); None when no variant qualifies."""
    styles = variant_styles(runs)
    memory, _ = memory_cells(runs)
    max_gb = max((cell.mean for tasks in memory.values() for cell in tasks.values()), default=1.0) or 1.0
    points = {
        panel: panel_points(panel, members, styles, max_gb, metric)
        for panel, members in group_runs(runs, by_task=per_task).items()
    }
    points = {panel: found for panel, found in points.items() if found[0]}
    if not points:
        return None
    scope = "per task" if per_task else "mean over the five tasks"
    title = f"Speed, accuracy and peak memory (marker area) ({scope}; {where(runs)})"
    fig, axes = panel_grid(len(points), title)
    ylabel = "test accuracy (%)" if per_task else "average test accuracy (%)"
    for (found, relative), ax, panel_title in zip(points.values(), axes, titles(list(points)), strict=True):
        draw_points(ax, found, relative, ylabel)
        ax.set_title(panel_title, fontsize=TITLE_SIZE)
    label_markers(fig, [(ax, found) for (found, _), ax in zip(points.values(), axes, strict=True)])
    return fig


def complete_variants(runs: Sequence[Run], metric: str = "test/acc") -> list[str]:
    """The variants with ``metric`` and a step time on all five tasks."""
    accuracy, steps = metric_cells(runs, metric), metric_cells(runs, STEP_MS)
    return [
        v for v in sorted(accuracy) if set(TASKS) <= set(accuracy[v]) and set(TASKS) <= set(steps.get(v, {}))
    ]
