"""What every figure of the project shares: one colour per attention, files without a display, and
the check that a figure's text is legible (inside the image, tick labels apart).

Every plot (the report's, the benchmarks') takes its colours from ``attention_color`` so that an
attention is drawn in the same colour everywhere, and is saved through ``save_figure``. Tests render
each plot from synthetic data and assert ``text_problems(fig) == []``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from lra.results.marker_labels import misplaced_labels

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.axis import Axis
    from matplotlib.backend_bases import RendererBase
    from matplotlib.figure import Figure
    from matplotlib.legend import Legend
    from matplotlib.transforms import Bbox

# The built-in attentions and the benchmarks' naive baseline, each with a colour of its own
# (matplotlib's tab10, then tab20b's darker hues for the state-space mixers, Dark2's mustard for window,
# hues of their own for the modern mixers, each family near its relative; black for the naive QKᵀ baseline).
ATTENTION_COLORS = {
    "standard": "#1f77b4",
    "nystrom": "#ff7f0e",
    "skyformer": "#2ca02c",
    "kernelized": "#d62728",
    "linformer": "#9467bd",
    "performer": "#8c564b",
    "reformer": "#e377c2",
    "bigbird": "#7f7f7f",
    "informer": "#bcbd22",
    "longformer": "#17becf",
    "s4d": "#637939",
    "mamba": "#7b4173",
    "window": "#e6ab02",
    # the modern mixers
    "based": "#fa8072",
    "gla": "#00796b",
    "retnet": "#5254a3",
    "deltanet": "#9ccc65",
    "gated_deltanet": "#33691e",
    "mamba2": "#a55194",
    "hyena": "#5d4037",
    "naive": "#000000",
}
# Colours for attentions from other packages, picked by a hash of the name (stable across runs).
EXTRA_COLORS = ("#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd", "#e6550d", "#31a354")
SAVED_FORMATS = (".png", ".svg")
MIN_PANEL_PX = 60  # a panel narrower or lower than this was squeezed by the layout


def natural_key(text: str) -> tuple:
    """Sorts labels with their numbers as numbers: ``window (window=8)`` before ``window (window=16)``."""
    return tuple((0, float(part), "") if part[:1].isdigit() else (1, 0.0, part)
                 for part in re.split(r"(\d+(?:\.\d+)?(?:e-?\d+)?)", text) if part)  # fmt: skip


def attention_name(label: str) -> str:
    """``nystrom`` of a row label such as ``nystrom (num_landmarks=32)``."""
    return label.split(" (")[0].strip()


def attention_color(label: str) -> str:
    """The colour of the attention a label names: the same for every plot and every variant."""
    name = attention_name(label)
    if name in ATTENTION_COLORS:
        return ATTENTION_COLORS[name]
    digest = int(hashlib.sha256(name.encode()).hexdigest(), 16)
    return EXTRA_COLORS[digest % len(EXTRA_COLORS)]


def darker(color: str, amount: float) -> str:
    """``color`` (hex) mixed with black by ``amount`` (0: itself; at most 0.7, so it stays a colour)."""
    amount = min(amount, 0.7)
    channels = [int(color[i : i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{round(channel * (1 - amount)):02x}" for channel in channels)


def agg_pyplot() -> ModuleType:
    """``matplotlib.pyplot`` on the Agg backend (files only, no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig: Figure, path: Path, formats: Iterable[str] = SAVED_FORMATS) -> list[Path]:
    """Write ``fig`` beside ``path`` in each format (``x.png`` → ``x.png`` and ``x.svg``), free it,
    and return the files written. The figure's own layout engine places its parts; nothing is cropped."""
    written = [path.with_suffix(suffix) for suffix in formats]
    for target in written:
        fig.savefig(target, dpi=120)
    agg_pyplot().close(fig)
    return written


def legend_entries(axes: Sequence[Axes]) -> dict[str, object]:
    """label -> artist of every labelled artist of ``axes``, each label once."""
    entries: dict[str, object] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            entries.setdefault(label, handle)
    return entries


def legend_below(fig: Figure, entries: dict[str, object], max_columns: int) -> Legend:
    """One legend of ``entries`` (label -> artist, e.g. ``legend_entries``) for all panels of ``fig``
    (a figure with constrained layout), below them and inside the image, in as many columns (at most
    ``max_columns``) as the figure's width holds."""
    renderer = fig.canvas.get_renderer()
    for columns in range(min(max_columns, len(entries)), 0, -1):
        legend = fig.legend(
            list(entries.values()), list(entries), loc="outside lower center", ncol=columns, fontsize=8
        )
        if columns == 1 or legend.get_window_extent(renderer).width < 0.98 * fig.bbox.width:
            return legend
        legend.remove()
    return legend


def log_axis_at(ax: Axes, which: str, values: Sequence[float], min_ratio: float = 1.4) -> None:
    """A log ``which`` ("x" or "y") axis labelled in plain numbers at ``values`` (e.g. the measured
    lengths), leaving out a value within ×``min_ratio`` of the last labelled one; minor ticks unlabelled."""
    from matplotlib.ticker import NullFormatter

    labelled: list[float] = []
    for value in sorted(v for v in values if v > 0):
        if not labelled or value >= min_ratio * labelled[-1]:
            labelled.append(value)
    getattr(ax, f"set_{which}scale")("log")
    axis = getattr(ax, f"{which}axis")
    axis.set_ticks(labelled, [f"{value:g}" for value in labelled])
    axis.set_minor_formatter(NullFormatter())


def log_axis(ax: Axes, which: str) -> None:
    """A log ``which`` ("x" or "y") axis labelled at 1, 2 and 5 × each decade (every few decades when
    the range is wide) in plain numbers, minor ticks unlabelled: matplotlib's default labels the minor
    ticks of a narrow range (3×10² 4×10²), and they collide."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    getattr(ax, f"set_{which}scale")("log")
    axis = getattr(ax, f"{which}axis")
    axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0), numticks=6))
    axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    axis.set_minor_formatter(NullFormatter())


def _titles(ax: Axes) -> list:
    """The panel titles ``ax`` shows (centre, left, right)."""
    return [t for t in (ax.title, ax._left_title, ax._right_title) if t.get_visible() and t.get_text()]


def _visible_texts(fig: Figure) -> list:
    """The text artists ``fig`` draws, tick labels aside (``_shown_tick_boxes`` picks the drawn ones)."""
    from matplotlib.text import Text

    tick_labels = {
        id(label)
        for ax in fig.axes
        for axis in (ax.xaxis, ax.yaxis)
        for tick in axis.get_major_ticks() + axis.get_minor_ticks()
        for label in (tick.label1, tick.label2)
    }
    return [
        t
        for t in fig.findobj(Text)
        if t.get_visible() and t.get_text().strip() and t.figure is fig and id(t) not in tick_labels
    ]


def _shown_tick_boxes(axis: Axis, renderer: RendererBase) -> list[tuple[str, Bbox]]:
    """The extents of the tick labels ``axis`` draws: visible, non-empty, within the view limits."""
    low, high = sorted(axis.get_view_interval())
    boxes = []
    for tick in axis.get_major_ticks() + axis.get_minor_ticks():
        for label in (tick.label1, tick.label2):
            inside = low - 1e-9 * abs(high - low) <= tick.get_loc() <= high + 1e-9 * abs(high - low)
            if label.get_visible() and label.get_text().strip() and inside:
                boxes.append((label.get_text(), label.get_window_extent(renderer)))
    return boxes


def _legends(fig: Figure) -> list[Legend]:
    """The figure's legends and those of its panels."""
    return list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]


@dataclass(frozen=True)
class Block:
    """A piece of the figure's text as drawn: ``kind`` is ``tick`` (a tick label of ``ax``'s ``axis``),
    ``title`` (a panel's), ``note`` (an annotation in ``ax``), ``legend`` (a whole legend, its entries
    inside it) or ``text`` (axis labels, the figure's title...); ``ax``: the panel it belongs to."""

    text: str
    box: Bbox
    kind: str
    ax: Axes | None = None
    axis: str = ""

    def clashes(self, other: Block) -> str:
        """What overlapping ``other`` is, in words."""
        same = self.kind == other.kind and self.ax is other.ax
        where = f" in {self.ax.get_title()!r}" if self.ax is not None else ""
        if same and self.kind == "tick" and self.axis == other.axis:
            return f"{self.axis} tick labels {self.text!r} and {other.text!r} overlap{where}"
        if same and self.kind == "note":
            return f"labels {self.text!r} and {other.text!r} overlap{where}"
        if self.kind == other.kind == "title":
            return f"titles {self.text!r} and {other.text!r} overlap"
        return f"{self.kind} {self.text!r} and {other.kind} {other.text!r} overlap"


def _blocks(fig: Figure, renderer: RendererBase) -> list[Block]:
    """Every piece of text ``fig`` draws (``Block``), tick labels within the view limits only."""
    from matplotlib.text import Text

    in_legends = {id(t) for legend in _legends(fig) for t in [*legend.get_texts(), legend.get_title()]}
    titles = {id(t) for ax in fig.axes for t in _titles(ax)}
    blocks = [
        Block(next((t.get_text() for t in legend.get_texts()), ""), legend.get_window_extent(renderer),
              "legend", legend.axes)
        for legend in _legends(fig)
    ]  # fmt: skip
    for text in _visible_texts(fig):
        if id(text) not in in_legends:
            note = text.axes is not None and text in text.axes.texts
            kind = "title" if id(text) in titles else "note" if note else "text"
            box = Text.get_window_extent(text, renderer)  # an annotation's own, without its leader line
            blocks.append(Block(text.get_text(), box, kind, text.axes))
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            shown = _shown_tick_boxes(axis, renderer)
            blocks += [Block(text, box, "tick", ax, axis.axis_name) for text, box in shown]
    return blocks


def text_problems(fig: Figure, tolerance_px: float = 1.0) -> list[str]:
    """Legibility problems of ``fig`` as drawn, one line each (empty when there are none): a piece of
    text (title, label, tick label, annotation, a whole legend) whose extent leaves the figure; two
    pieces of text over each other anywhere in the figure (tick labels of one axis, titles, labels
    placed in a panel, a legend over a title...); text or a legend over a panel it does not belong to;
    a panel squeezed below ``MIN_PANEL_PX``; and an annotation without a leader line nearer another
    marker than its own (``lra.results.marker_labels.misplaced_labels``). Extents come from matplotlib's own
    renderer."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    width, height = fig.bbox.width, fig.bbox.height
    blocks = _blocks(fig, renderer)
    problems = [
        f"{'legend' if b.kind == 'legend' else 'text'} {b.text!r} leaves the figure: {b.box.bounds} in "
        f"{width}x{height}"
        for b in blocks
        if min(b.box.x0, b.box.y0, width - b.box.x1, height - b.box.y1) < -tolerance_px
    ]
    for i, block in enumerate(blocks):
        problems += [block.clashes(other) for other in blocks[i + 1 :] if block.box.overlaps(other.box)]
    for ax in fig.axes:
        panel = ax.get_window_extent(renderer)
        if min(panel.width, panel.height) < MIN_PANEL_PX:
            problems.append(
                f"panel {ax.get_title()!r} is squeezed to {panel.width:.0f}x{panel.height:.0f} px"
            )
        problems += [
            f"{b.kind} {b.text!r} lies over the panel {ax.get_title()!r}"
            for b in blocks
            if b.ax is not ax and b.box.overlaps(panel)
        ]
        problems += misplaced_labels(ax, renderer, tolerance_px)
    return problems
