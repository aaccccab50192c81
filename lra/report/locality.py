"""How long range is each task (``experiment=locality``; Miralles-González et al. 2025): test accuracy
against the ``window`` core's width, beside full attention (``standard``), and each task's locality
length.

A *locality curve* is the completed ``window`` and ``standard`` runs of one task that share every
setting but the attention's (and the seed): the task's data, protocol and model. Its *locality
lengths* are the smallest swept window whose mean accuracy over seeds is within 1 point of
``standard``'s mean (at least that mean less 1), and the smallest whose mean reaches the 95% interval
of ``standard``'s mean (at least its lower end; ``standard`` needs two seeds for an interval). Where
``standard`` itself is at chance (its mean at most the majority class's share plus 1 point), no window
has anything to reach: the curve has no locality length.

A panel's title names its task and what sets its curve apart from the task's others: the preset where
the curves come from several, and the options that vary among the curves of one preset (those their
command lines set, ``lra.report.configurations.named_keys``), wrapped to the panel's width.
"""

from __future__ import annotations

import textwrap
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lra.config.naming import short_keys
from lra.provenance import markdown_table
from lra.report.configurations import named_keys, panel_of, usual_values, value_of
from lra.report.runs import CHANCE_MARGIN, Cell, Run
from lra.results.plotting import (
    agg_pyplot,
    attention_color,
    legend_below,
    legend_entries,
    log_axis_at,
    natural_key,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

WINDOW = "window"  # the core the sweep varies (its option ``window``)
FULL = "standard"  # the full attention it is compared with
POINT = 1.0  # accuracy points (%)
METRIC = "test/acc"
OWN_KEYS = ("seed", "attention.")  # what the runs of one curve may differ in
TITLE_CHARS = 48  # a line of a panel's title at its width and size


@dataclass(frozen=True)
class LocalityCurve:
    """One task's sweep: accuracy (%) over seeds per window, ``standard``'s, and chance (the test
    split's majority share, %; None where unrecorded); ``title`` names the task and what sets this
    curve apart from the task's others."""

    title: str
    windows: dict[int, Cell]
    full: Cell | None
    chance: float | None

    def at_chance(self) -> bool:
        """Whether ``standard``'s mean is at most chance plus ``CHANCE_MARGIN`` (in points)."""
        return None not in (self.full, self.chance) and self.full.mean <= self.chance + 100 * CHANCE_MARGIN

    def within_point(self) -> int | None:
        """The smallest window whose mean is at least ``standard``'s mean less ``POINT``."""
        if self.full is None or self.at_chance():
            return None
        return self.smallest_reaching(self.full.mean - POINT)

    def within_interval(self) -> int | None:
        """The smallest window whose mean is at least the lower end of ``standard``'s 95% interval."""
        if self.full is None or self.full.ci is None or self.at_chance():
            return None
        return self.smallest_reaching(self.full.ci[0])

    def smallest_reaching(self, level: float) -> int | None:
        return next((window for window, cell in sorted(self.windows.items()) if cell.mean >= level), None)


def setting(run: Run) -> tuple:
    """What the runs of one curve share: the panel (task, data, protocol) and every other setting."""
    rest = sorted((key, str(value)) for key, value in run.settings.items() if not key.startswith(OWN_KEYS))
    return (*panel_of(run), tuple(rest))


def accuracy_cell(runs: Sequence[Run]) -> Cell:
    """Test accuracy (%) over ``runs``' seeds."""
    return Cell.of([100 * float(run.metrics[METRIC]) for run in runs])


def curve_titles(groups: dict[tuple, list[Run]]) -> dict[tuple, str]:
    """Each group's title (module docstring): its task and data marks, its preset where the task's
    curves come from several, and the options its command line set that vary among the curves of its
    task and preset."""
    by_task: dict[str, list[tuple]] = defaultdict(list)
    for key, runs in groups.items():
        by_task[runs[0].task].append(key)
    titles = {}
    for task, keys in by_task.items():
        first = {key: groups[key][0] for key in keys}
        presets = {run.preset for run in first.values()}
        for key, run in first.items():
            same = [other for other in first.values() if other.preset == run.preset]
            usual = {k: v for k, v in usual_values(same).items() if not k.startswith(OWN_KEYS)}
            named = named_keys(run, usual)
            names = short_keys(named)
            parts = [run.data] * bool(run.data) + [f"experiment={run.preset}"] * (len(presets) > 1)
            parts += [f"{names[k]}={value_of(run, k)}" for k in named]
            title = f"{task} ({', '.join(parts)})" if parts else task
            titles[key] = textwrap.fill(title, TITLE_CHARS)
    return titles


def locality_curves(completed: Sequence[Run]) -> list[LocalityCurve]:
    """The curves of ``completed`` (the latest run per configuration × seed), one per task and setting
    with at least one ``window`` run, in task order."""
    groups: dict[tuple, list[Run]] = defaultdict(list)
    for run in completed:
        if run.attention in (WINDOW, FULL) and run.metrics.get(METRIC) is not None:
            groups[setting(run)].append(run)
    groups = {key: runs for key, runs in groups.items() if any(run.attention == WINDOW for run in runs)}
    titles = curve_titles(groups)
    curves = []
    for key in sorted(groups, key=lambda key: natural_key(titles[key])):
        runs = groups[key]
        by_window: dict[int, list[Run]] = defaultdict(list)
        for run in runs:
            if run.attention == WINDOW:
                by_window[int(run.config["attention"]["window"])].append(run)
        full = [run for run in runs if run.attention == FULL]
        shares = [run.chance for run in runs if run.chance is not None]
        curves.append(
            LocalityCurve(
                title=titles[key],
                windows={window: accuracy_cell(group) for window, group in sorted(by_window.items())},
                full=accuracy_cell(full) if full else None,
                chance=100 * max(shares) if shares else None,
            )
        )
    return curves


def draw_curve(ax: Axes, curve: LocalityCurve) -> None:
    """One panel: the windows' means with their 95% intervals, ``standard`` as a line and band, chance."""
    windows = list(curve.windows)
    means = [cell.mean for cell in curve.windows.values()]
    below = [cell.mean - cell.ci[0] if cell.ci else 0.0 for cell in curve.windows.values()]
    above = [cell.ci[1] - cell.mean if cell.ci else 0.0 for cell in curve.windows.values()]
    ax.errorbar(windows, means, yerr=[below, above], color=attention_color(WINDOW), marker="o", capsize=3,
                label=f"{WINDOW} (mean, 95% interval)")  # fmt: skip
    if curve.full is not None:
        color = attention_color(FULL)
        ax.axhline(curve.full.mean, color=color, label=f"{FULL}: full attention (mean)")
        if curve.full.ci is not None:
            ax.axhspan(*curve.full.ci, color=color, alpha=0.15, label=f"{FULL}: 95% interval")
    if curve.chance is not None:
        ax.axhline(curve.chance, color="0.4", linestyle=":", label="chance (majority class)")
    labelled = windows[::-1][:: 1 if len(windows) <= 7 else 2][::-1]  # the widest (full) window always
    log_axis_at(ax, "x", labelled, min_ratio=1.0)
    ax.set_title(curve.title, fontsize=9)
    ax.set_xlabel("window w (keys within ±w/2)", fontsize=8)
    ax.set_ylabel("test accuracy (%)", fontsize=8)
    ax.tick_params(labelsize=8)
    ax.grid(alpha=0.3)


def locality_figure(completed: Sequence[Run]) -> Figure | None:
    """A panel per curve (``locality_curves``) and one legend below; None when no task has a window run."""
    curves = locality_curves(completed)
    if not curves:
        return None
    plt = agg_pyplot()
    columns = min(3, len(curves))
    rows = -(-len(curves) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(4.4 * columns, 3.4 * rows + 0.8),
                             layout="constrained", squeeze=False)  # fmt: skip
    panels = list(axes.flat)
    for ax, curve in zip(panels, curves, strict=False):
        draw_curve(ax, curve)
    for ax in panels[len(curves) :]:
        ax.set_visible(False)
    legend_below(fig, legend_entries(panels[: len(curves)]), max_columns=4)
    return fig


def shown(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def locality_table(completed: Sequence[Run]) -> str:
    """Markdown: each curve's full-attention accuracy, chance and locality lengths ("" without curves)."""
    curves = locality_curves(completed)
    if not curves:
        return ""
    rows = []
    for curve in curves:
        full = "—" if curve.full is None else curve.full.format(with_interval=True)
        seeds = "/".join(map(str, sorted({cell.count for cell in curve.windows.values()})))
        swept = f"{min(curve.windows)} to {max(curve.windows)} ({len(curve.windows)}; seeds {seeds})"
        lengths = ["—" if w is None else w for w in (curve.within_point(), curve.within_interval())]
        if curve.at_chance():
            lengths = ["— (full attention at chance)", "—"]
        rows.append([curve.title, full, shown(curve.chance), *lengths, swept])
    header = ["task", f"{FULL} (%)", "chance (%)", f"within {POINT:g} point", "within the 95% interval",
              "windows swept"]  # fmt: skip
    return markdown_table(header, rows)
