"""The panels of the report's figures and how a variant looks in them.

A figure has one panel per task × data set × training protocol (``group_runs``), so that runs on a
generator's data (the CPU demos) or under a paper's preset never share a panel with the others; its
title names what the panel's runs share, and each variant in it goes by its ``Run.label``. Every
variant has one ``Style`` in a figure, the same in each panel: its attention's colour
(``lra.results.plotting.attention_color``), a marker of its own among the variants of that attention (a
circle first; a square first for a self-pretrained one) and a dashed line when self-pretrained.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lra.report.runs import Run
from lra.results.plotting import (
    agg_pyplot,
    attention_color,
    darker,
    legend_below,
    legend_entries,
    natural_key,
)
from lra.results.published_numbers import TASKS

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.legend import Legend

PANEL_INCHES = 3.4
MAX_COLUMNS = 3  # panels side by side; more panels go on further rows
TITLE_CHARS = 38  # a line of a panel title in PANEL_INCHES at TITLE_SIZE
TITLE_SIZE = 10
SUPTITLE_CHARS_PER_INCH = 12  # characters of the figure's title (10 pt) per inch of width
MIN_WIDTH_INCHES = 7.5  # room for a figure title of ~100 characters
ALL_TASKS = "all five tasks"
SCRATCH_MARKERS = ("o", "D", "^", "v", "<", ">", "p", "h", "8", "d")
SPT_MARKERS = ("s", "P", "X", "*", "H")
LINE_STYLES = ("-", "--", "-.", ":", (0, (5, 1)))  # from scratch, SPT, then SPT with other choices


@dataclass(frozen=True)
class Panel:
    """What a panel's runs share: the task (or ``ALL_TASKS``), their data marks ("" for the task's own
    data) and their training protocol."""

    task: str
    data: str
    protocol: str

    def order(self) -> tuple:
        return (TASKS.index(self.task) if self.task in TASKS else -1, self.data, self.protocol)

    def title(self, with_protocol: bool) -> str:
        """The task, its data marks and (``with_protocol``) the protocol, wrapped to the panel's width."""
        parts = [self.data] if self.data else []
        parts += self.protocol.split(": ") if with_protocol else []  # the preset on a line of its own
        lines = [self.task, *(textwrap.fill(part, TITLE_CHARS) for part in parts)]
        return "\n".join(lines)


def group_runs(runs: Iterable[Run], by_task: bool = True) -> dict[Panel, list[Run]]:
    """The runs of each panel, in task order (then data, then protocol); ``by_task`` False: one panel
    per protocol over all tasks (for figures that average the tasks)."""
    groups: dict[Panel, list[Run]] = {}
    for run in runs:
        panel = Panel(run.task, run.data, run.protocol) if by_task else Panel(ALL_TASKS, "", run.protocol)
        groups.setdefault(panel, []).append(run)
    return {panel: groups[panel] for panel in sorted(groups, key=Panel.order)}


def titles(panels: Sequence[Panel]) -> list[str]:
    """Each panel's title, naming the protocol only where the panels do not all share one."""
    with_protocol = len({panel.protocol for panel in panels}) > 1
    return [panel.title(with_protocol) for panel in panels]


def panel_grid(count: int, title: str) -> tuple[Figure, list[Axes]]:
    """``count`` panels in rows of at most ``MAX_COLUMNS`` under ``title`` (constrained layout)."""
    columns = min(count, MAX_COLUMNS)
    rows = math.ceil(count / columns)
    fig, axes = agg_pyplot().subplots(
        rows,
        columns,
        figsize=(max(PANEL_INCHES * columns + 0.6, MIN_WIDTH_INCHES), (PANEL_INCHES + 0.9) * rows + 0.5),
        squeeze=False,
        layout="constrained",
    )
    fig.suptitle(textwrap.fill(title, int(fig.get_figwidth() * SUPTITLE_CHARS_PER_INCH)), fontsize=10)
    flat = list(axes.flat)
    for spare in flat[count:]:
        spare.remove()
    return fig, flat[:count]


def legend_below_panels(
    fig: Figure, axes: Sequence[Axes], handles: dict[str, object] | None = None, notes: dict | None = None
) -> Legend:
    """One legend for all panels below them, in the order of the labels (the panels' labelled
    artists, or ``handles``: label -> artist), then ``notes`` (what a line or marker style means), the
    figure made taller by the legend's height so that the panels keep their size."""
    entries = legend_entries(axes) if handles is None else handles
    ordered = dict(sorted(entries.items(), key=lambda item: natural_key(item[0])))
    legend = legend_below(fig, {**ordered, **(notes or {})}, MAX_COLUMNS)
    renderer = fig.canvas.get_renderer()
    fig.set_figheight(fig.get_figheight() + legend.get_window_extent(renderer).height / fig.dpi + 0.1)
    return legend


@dataclass(frozen=True)
class Style:
    """How a variant is drawn: colour, marker and line style."""

    color: str
    marker: str
    linestyle: str | tuple


def variant_styles(runs: Iterable[Run]) -> dict[str, Style]:
    """``Run.label`` -> its ``Style``: markers in order of the labels of one attention (from scratch,
    then self-pretrained); line styles by the rank of the SPT label (solid from scratch)."""
    labels = sorted(
        {(run.attention, run.spt or "", run.label) for run in runs}, key=lambda k: natural_key(" ".join(k))
    )
    spt_labels = sorted({spt for _, spt, _ in labels if spt})
    styles, counts = {}, {}
    for attention, spt, label in labels:
        rank = counts[(attention, bool(spt))] = counts.get((attention, bool(spt)), -1) + 1
        markers = SPT_MARKERS if spt else SCRATCH_MARKERS
        line = LINE_STYLES[(1 + spt_labels.index(spt) if spt else 0) % len(LINE_STYLES)]
        styles[label] = Style(*marker_of(attention, rank, markers), line)
    return styles


def marker_of(attention: str, rank: int, markers: Sequence[str] = SCRATCH_MARKERS) -> tuple[str, str]:
    """(colour, marker) of an attention's ``rank``-th label: its colour and the next marker; once the
    markers are used up, each round in a darker shade of the colour, so that no two labels of a figure
    look alike."""
    shade = rank // len(markers)
    return darker(attention_color(attention), 0.35 * shade), markers[rank % len(markers)]


def fit_axis(ax: Axes, which: str, values: Sequence[float], low: float | None = 0.0,
             high: float | None = None, pad: float = 0.1) -> None:  # fmt: skip
    """Limits of ``ax``'s ``which`` axis ("x" or "y") from ``values``, padded by ``pad`` of their range
    (of the value itself when they are all equal; on a log axis by that share of their ratio) and kept
    within [``low``, ``high``]: the axis starts where the data does, never at an impossible value such
    as a negative speed."""
    lowest, highest = min(values), max(values)
    if getattr(ax, f"get_{which}scale")() == "log":  # padded by a factor instead
        factor = (highest / lowest) ** pad if highest > lowest else 1.0 + pad
        start, end = lowest / factor, highest * factor
    else:
        margin = pad * ((highest - lowest) or abs(highest) or 1.0)
        start, end = lowest - margin, highest + margin
    start = start if low is None else max(start, low)
    end = end if high is None else min(end, high)
    getattr(ax, f"set_{which}lim")(start, end)
