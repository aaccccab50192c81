"""The report's figures, each a function of the runs that returns a matplotlib Figure (saved as PNG
and SVG by ``lra.plotting.save_figure``). Colours come from ``lra.plotting.attention_color``, so an
attention has one colour in every plot; a hollow marker is a variant with runs at chance. A
self-pretrained (SPT) variant is drawn apart from its model trained from scratch: a square marker or a
dashed curve (another marker and dash for each further SPT choice, such as ``share=0.4``), ``SPT`` in
its label, its time counting its pretraining.

- ``accuracy_vs_time``: test accuracy against whole-fit time, one panel per task.
- ``validation_curves``: Skyformer Figure 2, validation accuracy against training time, one panel per
  task, the mean over seeds with a min-max band; an SPT curve starts after its pretraining.
- ``speed_accuracy_memory``: the LRA paper's Figure 3, training speed relative to ``standard`` against
  average accuracy, marker area the peak memory; per task (``per_task=True``) for variants that do not
  have all five tasks.
"""

from __future__ import annotations

import statistics
import textwrap
from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING

from lra.marker_labels import place_labels
from lra.plotting import agg_pyplot, attention_color, legend_below, log_axis
from lra.published_numbers import TASKS
from lra.report.curves import Curve, seed_band
from lra.report.runs import TOTAL_TIME, Cell, Run, metric_cells
from lra.report.tables import REFERENCE, memory_cells

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

PANEL_INCHES = 3.4
TITLE_CHARS = 32  # a line of a panel title in PANEL_INCHES at the axes' title size
MIN_WIDTH_INCHES = 7.5  # room for a title of ~100 characters
MAX_LEGEND_COLUMNS = 3


def where(runs: Sequence[Run]) -> str:
    """The devices the runs trained on and their shared ``features`` budget(s), for a title."""
    devices = ", ".join(sorted({run.device for run in runs if run.device})) or "unknown device"
    budgets = sorted({run.features for run in runs if run.features is not None})
    return devices + (f"; features={'/'.join(map(str, budgets))}" if budgets else "")


def attention_of(runs: Sequence[Run]) -> dict[str, str]:
    """variant -> its attention's registry name (for its colour)."""
    return {run.variant: run.attention for run in runs}


def tasks_present(variants: dict[str, dict[str, object]]) -> list[str]:
    return [task for task in TASKS if any(task in tasks for tasks in variants.values())] or list(TASKS)


def panels(count: int, title: str) -> tuple[Figure, list[Axes]]:
    """One row of ``count`` panels under ``title``, laid out by matplotlib's constrained layout."""
    plt = agg_pyplot()
    fig, axes = plt.subplots(
        1,
        count,
        figsize=(max(PANEL_INCHES * count + 0.6, MIN_WIDTH_INCHES), PANEL_INCHES + 1.4),
        squeeze=False,
        layout="constrained",
    )
    fig.suptitle(title, fontsize=10)
    return fig, list(axes[0])


def legend_below_panels(fig: Figure, axes: Sequence[Axes]) -> None:
    """One legend for all panels, below them inside the figure, at most one column per panel."""
    legend_below(fig, axes, min(MAX_LEGEND_COLUMNS, max(1, len(axes))))


def time_axis(ax: Axes, values: Sequence[float]) -> None:
    """A log x scale labelled at 1, 2 and 5 × each decade in plain numbers, minor ticks unlabelled,
    where ``values`` span a decade or more; else a linear one with at most five ticks. (matplotlib's
    defaults label the minor ticks of a narrow log range as 3×10² 4×10², which collide.)"""
    from matplotlib.ticker import MaxNLocator

    if min(values) <= 0 or max(values) < 10 * min(values):
        ax.xaxis.set_major_locator(MaxNLocator(nbins=4))
        return
    log_axis(ax, "x")


TIME_UNITS = ((3 * 3600, 3600, "h"), (600, 60, "min"), (0, 1, "s"))  # (from seconds, divisor, unit)


def time_unit(longest_s: float) -> tuple[float, str]:
    """(divisor, unit) that shows ``longest_s`` seconds as a number of a readable size."""
    return next((divisor, unit) for start, divisor, unit in TIME_UNITS if longest_s >= start)


def time_label(unit: str, styles: dict[str, int]) -> str:
    """The time axis's label, saying that pretraining counts when a variant was self-pretrained."""
    return f"training time{' incl. pretraining' if any(styles.values()) else ''} ({unit})"


def chance_label(variant: str, cell: Cell) -> str:
    return f"{variant} ({cell.at_chance} at chance)" if cell.at_chance else variant


MARKERS = ("o", "s", "D", "^", "v")  # from scratch, SPT, then SPT with other choices
LINE_STYLES = ("-", "--", "-.", ":", (0, (5, 1)))


def spt_styles(runs: Sequence[Run]) -> dict[str, int]:
    """variant -> 0 from scratch, else 1 + the rank of its SPT label among the runs' labels (``SPT``
    first): the index of its marker and line style."""
    labels = sorted({run.spt for run in runs if run.spt})
    return {run.variant: 1 + labels.index(run.spt) if run.spt else 0 for run in runs}


def accuracy_vs_time(runs: Sequence[Run], metric: str = "test/acc") -> Figure:
    """Test accuracy (%) against whole-fit wall time (pretraining included), one panel per task, one
    marker per variant (a square for SPT)."""
    accuracy = metric_cells(runs, metric, scale=100.0)
    seconds = metric_cells(runs, TOTAL_TIME)
    styles = spt_styles(runs)
    names = attention_of(runs)
    tasks = tasks_present(accuracy)
    longest = max((cell.mean for tasks in seconds.values() for cell in tasks.values()), default=0.0)
    divisor, unit = time_unit(longest)
    fig, axes = panels(len(tasks), f"Test accuracy against training time ({where(runs)})")
    for task, ax in zip(tasks, axes, strict=True):
        drawn = []
        for variant in sorted(accuracy):
            acc, time_s = accuracy[variant].get(task), seconds.get(variant, {}).get(task)
            if acc is None or time_s is None:
                continue
            drawn.append(time_s.mean / divisor)
            color = attention_color(names[variant])
            ax.errorbar(
                time_s.mean / divisor, acc.mean, xerr=time_s.std / divisor, yerr=acc.std,
                marker=MARKERS[styles[variant] % len(MARKERS)],
                capsize=3, color=color, markerfacecolor="none" if acc.at_chance else color,
                label=chance_label(variant, acc),
            )  # fmt: skip
        ax.set(xlabel=time_label(unit, styles), ylabel="test accuracy (%)", title=task)
        if drawn:
            time_axis(ax, drawn)
        ax.grid(True, which="both", alpha=0.3)
    legend_below_panels(fig, axes)
    return fig


def validation_curves(curves: Sequence[Curve]) -> Figure:
    """Skyformer Figure 2: validation accuracy (%) against training time, one panel per task, one
    curve per variant: the mean over seeds with the band between the lowest and highest seed; dashed
    for SPT, hollow markers at its validations for a variant with runs at chance."""
    grouped: dict[str, dict[str, list[Curve]]] = defaultdict(lambda: defaultdict(list))
    for curve in curves:
        grouped[curve.run.variant][curve.run.task].append(curve)
    runs = [curve.run for curve in curves]
    names, styles = attention_of(runs), spt_styles(runs)
    tasks = tasks_present(grouped)
    divisor, unit = time_unit(max(max(curve.seconds) for curve in curves))
    fig, axes = panels(
        len(tasks), f"Validation accuracy during training, mean and min-max over seeds ({where(runs)})"
    )
    for task, ax in zip(tasks, axes, strict=True):
        for variant in sorted(grouped):
            if task not in grouped[variant]:
                continue
            group = grouped[variant][task]
            band, color = seed_band(group), attention_color(names[variant])
            flagged = sum(curve.run.at_chance() for curve in group)
            label = f"{variant} ({flagged} at chance)" if flagged else variant
            x = [seconds / divisor for seconds in band.seconds]
            style = LINE_STYLES[styles[variant] % len(LINE_STYLES)]
            ax.plot(
                x, band.mean, color=color, linestyle=style, label=label,
                marker="o" if flagged else None, markersize=4, markerfacecolor="none",
            )  # fmt: skip
            ax.fill_between(x, band.low, band.high, color=color, alpha=0.2, linewidth=0)
        ax.set(xlabel=time_label(unit, styles), ylabel="validation accuracy (%)", title=task)
        ax.grid(True, alpha=0.3)
    legend_below_panels(fig, axes)
    return fig


def speed_per_task(runs: Sequence[Run]) -> dict[str, dict[str, float]]:
    """variant -> task -> training steps per second (1000 / median step ms) relative to ``standard``
    on the same task; absolute steps per second where no ``standard`` run has the task."""
    step_ms = metric_cells(runs, "perf/step_ms")
    names = attention_of(runs)
    reference = next((v for v in sorted(step_ms) if names.get(v) == REFERENCE), None)
    speeds: dict[str, dict[str, float]] = {}
    for variant, tasks in step_ms.items():
        for task, cell in tasks.items():
            base = step_ms.get(reference, {}).get(task) if reference else None
            speeds.setdefault(variant, {})[task] = base.mean / cell.mean if base else 1000 / cell.mean
    return speeds


def speed_accuracy_memory(
    runs: Sequence[Run], per_task: bool = False, metric: str = "test/acc"
) -> Figure | None:
    """The LRA paper's Figure 3: x = training speed relative to ``standard`` (steps per second, the
    mean over tasks), y = accuracy (%, the mean over the five tasks), marker area = peak memory (GB,
    the mean over tasks), one labelled marker per variant that has all five tasks; with ``per_task``,
    one panel per task over every variant that has it. None when no variant qualifies."""
    accuracy = metric_cells(runs, metric, scale=100.0)
    speeds = speed_per_task(runs)
    memory, _ = memory_cells(runs)
    names = attention_of(runs)
    relative = any(names.get(v) == REFERENCE for v in speeds)
    if per_task:
        groups = {task: [v for v in sorted(accuracy) if task in accuracy[v] and task in speeds.get(v, {})]
                  for task in TASKS}  # fmt: skip
        groups = {task: variants for task, variants in groups.items() if variants}
    else:
        groups = {"all five tasks": complete_variants(runs, metric)}
    if not any(groups.values()):
        return None
    scope = "per task" if per_task else "mean over the five tasks"
    title = f"Speed, accuracy and peak memory (marker area) ({scope}; {where(runs)})"
    fig, axes = panels(len(groups), title)
    placements = []
    for (panel, variants), ax in zip(groups.items(), axes, strict=True):
        tasks = [panel] if per_task else list(TASKS)
        labels, shared = short_labels(variants)
        marker_labels = []
        for variant in variants:
            cells = [accuracy[variant][t] for t in tasks]
            flagged = sum(cell.at_chance for cell in cells)
            x = statistics.fmean(speeds[variant][t] for t in tasks)
            y = statistics.fmean(cell.mean for cell in cells)
            gb = [memory[variant][t].mean for t in tasks if t in memory.get(variant, {})]
            size = 60 + 400 * (statistics.fmean(gb) / max_memory(memory) if gb else 0)
            color = attention_color(names[variant])
            ax.scatter(x, y, s=size, color=color, alpha=0.5, edgecolors=color, linewidths=1.5,
                       facecolors="none" if flagged else color)  # fmt: skip
            label = f"{labels[variant]} ({flagged} at chance)" if flagged else labels[variant]
            marker_labels.append((label, x, y))
        ax.set(title=panel_title(panel, shared),
               ylabel=f"{'test' if per_task else 'average test'} accuracy (%)",
               xlabel=f"training speed ({'× standard' if relative else 'steps/s'})")  # fmt: skip
        ax.margins(0.35)
        ax.grid(True, alpha=0.3)
        placements.append((ax, marker_labels))
    for ax, marker_labels in placements:
        place_labels(fig, ax, marker_labels)
    return fig


def panel_title(panel: str, shared: str) -> str:
    """A panel's title: its task, then what all its variants share, wrapped to the panel's width."""
    return textwrap.fill(f"{panel} ({shared})", TITLE_CHARS) if shared else panel


def short_labels(variants: Sequence[str]) -> tuple[dict[str, str], str]:
    """Each variant's label without the parenthesised parts every variant shares (such as
    ``dataset=listops-demo, generated data``), and those shared parts, said once per panel."""
    parts = {v: v.partition(" (")[2].rstrip(")").split(", ") if " (" in v else [] for v in variants}
    shared = [p for p in next(iter(parts.values()), []) if all(p in other for other in parts.values())]
    labels = {}
    for variant, own in parts.items():
        kept = [p for p in own if p not in shared]
        name = variant.partition(" (")[0]
        labels[variant] = f"{name} ({', '.join(kept)})" if kept else name
    return labels, ", ".join(shared)


def complete_variants(runs: Sequence[Run], metric: str = "test/acc") -> list[str]:
    """The variants with ``metric`` and a step time on all five tasks."""
    accuracy, steps = metric_cells(runs, metric), metric_cells(runs, "perf/step_ms")
    return [
        v for v in sorted(accuracy) if set(TASKS) <= set(accuracy[v]) and set(TASKS) <= set(steps.get(v, {}))
    ]


def max_memory(memory: dict[str, dict[str, Cell]]) -> float:
    return max((cell.mean for tasks in memory.values() for cell in tasks.values()), default=1.0) or 1.0
