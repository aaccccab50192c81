"""The report's figures of accuracy against time, each a function of the runs that returns a matplotlib
Figure (saved as PNG and SVG by ``lra.results.plotting.save_figure``), one panel per task × data set ×
protocol (``lra.report.panels``); a variant keeps its colour, marker and dash in every panel, and a hollow
marker is a variant with runs at chance. A self-pretrained (SPT) variant is drawn apart from its model trained
from scratch: a square marker (another for each further SPT choice, such as ``share=0.4``), a dashed
curve, ``SPT`` in its label, its time counting its pretraining.

- ``accuracy_vs_time``: test accuracy against whole-fit time.
- ``validation_curves``: Skyformer Figure 2, validation accuracy against training time, the mean over
  seeds with a min-max band; an SPT curve starts after its pretraining.

The LRA paper's Figure 3 is ``lra.report.figure3``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING

from lra.report.curves import Curve, seed_band
from lra.report.panels import TITLE_SIZE, group_runs, legend_below_panels, panel_grid, titles, variant_styles
from lra.report.runs import TOTAL_TIME, Run, metric_cells
from lra.results.plotting import log_axis, natural_key

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

CURVE_MARKERS = 6  # markers along a validation curve


def where(runs: Sequence[Run]) -> str:
    """The devices the runs trained on and their shared ``features`` budget(s), for a title."""
    devices = ", ".join(sorted({run.device for run in runs if run.device})) or "unknown device"
    budgets = sorted({run.features for run in runs if run.features is not None})
    return devices + (f"; features={'/'.join(map(str, budgets))}" if budgets else "")


def time_axis(ax: Axes, values: Sequence[float]) -> None:
    """A log x scale (``lra.results.plotting.log_axis``) where ``values`` span a decade or more; else a linear
    one with at most five ticks."""
    from matplotlib.ticker import MaxNLocator

    if min(values) <= 0 or max(values) < 10 * min(values):
        ax.xaxis.set_major_locator(MaxNLocator(nbins=4))
        return
    log_axis(ax, "x")


TIME_UNITS = ((3 * 3600, 3600, "h"), (600, 60, "min"), (0, 1, "s"))  # (from seconds, divisor, unit)


def time_unit(longest_s: float) -> tuple[float, str]:
    """(divisor, unit) that shows ``longest_s`` seconds (a panel's longest) as a number of a readable
    size."""
    return next((divisor, unit) for start, divisor, unit in TIME_UNITS if longest_s >= start)


def time_label(unit: str, runs: Sequence[Run]) -> str:
    """The time axis's label, saying that pretraining counts when a run was self-pretrained."""
    return f"training time{' incl. pretraining' if any(run.spt for run in runs) else ''} ({unit})"


def chance_label(label: str, at_chance: int) -> str:
    return f"{label} ({at_chance} at chance)" if at_chance else label


def accuracy_vs_time(runs: Sequence[Run], metric: str = "test/acc") -> Figure:
    """Test accuracy (%) against whole-fit wall time (pretraining included), one marker per variant."""
    styles, groups = variant_styles(runs), group_runs(runs)
    fig, axes = panel_grid(len(groups), f"Test accuracy against training time ({where(runs)})")
    for (panel, members), ax, title in zip(groups.items(), axes, titles(list(groups)), strict=True):
        accuracy = metric_cells(members, metric, scale=100.0)
        seconds = metric_cells(members, TOTAL_TIME)
        label = {run.variant: run.label for run in members}
        divisor, unit = time_unit(max((run.value(TOTAL_TIME) or 0.0 for run in members), default=0.0))
        drawn = []
        for variant in sorted(accuracy, key=label.get):
            acc, time_s = accuracy[variant][panel.task], seconds.get(variant, {}).get(panel.task)
            if time_s is None:
                continue
            drawn.append(time_s.mean / divisor)
            style = styles[label[variant]]
            ax.errorbar(
                time_s.mean / divisor, acc.mean, xerr=time_s.std / divisor, yerr=acc.std,
                marker=style.marker, capsize=3, color=style.color,
                markerfacecolor="none" if acc.at_chance else style.color,
                label=chance_label(label[variant], acc.at_chance),
            )  # fmt: skip
        ax.set(xlabel=time_label(unit, members), ylabel="test accuracy (%)")
        ax.set_title(title, fontsize=TITLE_SIZE)
        if drawn:
            time_axis(ax, drawn)
        ax.grid(True, which="both", alpha=0.3)
    legend_below_panels(fig, axes)
    return fig


def validation_curves(curves: Sequence[Curve]) -> Figure:
    """Skyformer Figure 2: validation accuracy (%) against training time, one curve per variant: the
    mean over seeds with the band between the lowest and highest seed; hollow markers for a variant
    with runs at chance."""
    runs = [curve.run for curve in curves]
    styles, groups = variant_styles(runs), group_runs(runs)
    fig, axes = panel_grid(
        len(groups), f"Validation accuracy during training, mean and min-max over seeds ({where(runs)})"
    )
    for members, ax, title in zip(groups.values(), axes, titles(list(groups)), strict=True):
        by_label: dict[str, list[Curve]] = defaultdict(list)
        ids = {id(run) for run in members}
        for curve in curves:
            if id(curve.run) in ids:
                by_label[curve.run.label].append(curve)
        divisor, unit = time_unit(max(max(curve.seconds) for group in by_label.values() for curve in group))
        for label in sorted(by_label, key=natural_key):
            group, style = by_label[label], styles[label]
            band = seed_band(group)
            flagged = sum(curve.run.at_chance() for curve in group)
            x = [seconds / divisor for seconds in band.seconds]
            ax.plot(
                x, band.mean, color=style.color, linestyle=style.linestyle,
                label=chance_label(label, flagged), marker=style.marker, markersize=4,
                markevery=max(1, len(x) // CURVE_MARKERS), markerfacecolor="none" if flagged else style.color,
            )  # fmt: skip
            ax.fill_between(x, band.low, band.high, color=style.color, alpha=0.2, linewidth=0)
        ax.set(xlabel=time_label(unit, members), ylabel="validation accuracy (%)")
        ax.set_title(title, fontsize=TITLE_SIZE)
        ax.grid(True, alpha=0.3)
    legend_below_panels(fig, axes)
    return fig
