"""What every figure of the project shares: one colour per attention, files without a display, and
the check that a figure's text is legible (inside the image, tick labels apart).

Every plot (the report's, the benchmarks') takes its colours from ``attention_color`` so that an
attention is drawn in the same colour everywhere, and is saved through ``save_figure``. Tests render
each plot from synthetic data and assert ``text_problems(fig) == []``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from lra.marker_labels import misplaced_labels

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.axis import Axis
    from matplotlib.backend_bases import RendererBase
    from matplotlib.figure import Figure
    from matplotlib.transforms import Bbox

# The built-in attentions and the benchmarks' naive baseline, each with a colour of its own
# (matplotlib's tab10, then tab20b's darker hues for the mixers; black for the naive QKᵀ baseline).
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
    "naive": "#000000",
}
# Colours for attentions from other packages, picked by a hash of the name (stable across runs).
EXTRA_COLORS = ("#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd", "#e6550d", "#31a354")
SAVED_FORMATS = (".png", ".svg")


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


def legend_below(fig: Figure, axes: Sequence[Axes], max_columns: int) -> None:
    """One legend for all panels of ``fig`` (a figure with constrained layout), below them and inside
    the image: each label once, in as many columns (at most ``max_columns``) as the figure's width holds."""
    entries: dict[str, object] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            entries.setdefault(label, handle)
    renderer = fig.canvas.get_renderer()
    for columns in range(min(max_columns, len(entries)), 0, -1):
        legend = fig.legend(
            list(entries.values()), list(entries), loc="outside lower center", ncol=columns, fontsize=8
        )
        if columns == 1 or legend.get_window_extent(renderer).width < 0.98 * fig.bbox.width:
            return
        legend.remove()


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


def text_problems(fig: Figure, tolerance_px: float = 1.0) -> list[str]:
    """Legibility problems of ``fig`` as drawn, one line each (empty when there are none): a text
    artist (title, label, legend entry, annotation, tick label) whose extent leaves the figure, two
    tick labels of one axis that overlap, two panel titles that overlap, two annotations (labels placed
    in a panel) that overlap, and
    an annotation without a leader line nearer another marker than its own
    (``lra.marker_labels.misplaced_labels``). Extents come from matplotlib's own renderer."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    width, height = fig.bbox.width, fig.bbox.height
    tick_boxes = {
        (ax.get_title(), axis.axis_name): _shown_tick_boxes(axis, renderer)
        for ax in fig.axes
        for axis in (ax.xaxis, ax.yaxis)
    }
    texts = [(text.get_text(), text.get_window_extent(renderer)) for text in _visible_texts(fig)]
    problems = []
    for text, box in texts + [tick for boxes in tick_boxes.values() for tick in boxes]:
        if (
            box.x0 < -tolerance_px
            or box.y0 < -tolerance_px
            or box.x1 > width + tolerance_px
            or box.y1 > height + tolerance_px
        ):
            problems.append(f"text {text!r} leaves the figure: {box.bounds} in {width}x{height}")
    titles = [(t.get_text(), t.get_window_extent(renderer)) for ax in fig.axes for t in _titles(ax)]
    for i, (text_a, box_a) in enumerate(titles):
        for text_b, box_b in titles[i + 1 :]:
            if box_a.overlaps(box_b):
                problems.append(f"titles {text_a!r} and {text_b!r} overlap")
    for ax in fig.axes:
        notes = [(t.get_text(), t.get_window_extent(renderer)) for t in ax.texts if t.get_visible()]
        for i, (text_a, box_a) in enumerate(notes):
            for text_b, box_b in notes[i + 1 :]:
                if box_a.overlaps(box_b):
                    problems.append(f"labels {text_a!r} and {text_b!r} overlap in {ax.get_title()!r}")
        problems += misplaced_labels(ax, renderer, tolerance_px)
    for (title, axis_name), boxes in tick_boxes.items():
        for i, (text_a, box_a) in enumerate(boxes):
            for text_b, box_b in boxes[i + 1 :]:
                if box_a.overlaps(box_b):
                    problems.append(f"{axis_name} tick labels {text_a!r} and {text_b!r} overlap in {title!r}")
    return problems
