"""Labels beside their own markers in a scatter chart, and the check that each label is read with
its own marker.

``place_labels`` puts each label next to its marker (right, left, above, below or between), inside
the panel, over no other label or marker and nearer its own marker than any other; where no such
place is free it puts the label further out and joins it to its marker with a leader line; where
none is, it says so and leaves the panel without labels.
``misplaced_labels`` finds a label without a leader line that sits nearer another marker than its
own (what ``lra.results.plotting.text_problems`` reports). All geometry is in display pixels.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.backend_bases import RendererBase
    from matplotlib.figure import Figure
    from matplotlib.transforms import Bbox

# Directions tried beside a marker, in degrees: right, left, above, below, then the diagonals.
BESIDE_DEGREES = (0, 180, 90, 270, 30, 150, 210, 330, 60, 120, 240, 300)
LEADER_DEGREES = tuple(range(0, 360, 15))
LEADER_RINGS = 10  # rings further out tried for a label with a leader line


@dataclass(frozen=True)
class Marker:
    """A round marker as drawn: centre ``(x, y)`` and radius, in display pixels."""

    x: float
    y: float
    radius: float


def scatter_markers(ax: Axes) -> list[Marker]:
    """The markers of every scatter collection of ``ax`` (edge included), in display pixels."""
    from matplotlib.collections import PathCollection

    markers = []
    for collection in ax.collections:
        if not isinstance(collection, PathCollection):
            continue
        centres = collection.get_offset_transform().transform(collection.get_offsets())
        sizes = collection.get_sizes() if len(collection.get_sizes()) else [36.0]
        widths = collection.get_linewidths() if len(collection.get_linewidths()) else [0.0]
        for index, (x, y) in enumerate(centres):
            points = math.sqrt(sizes[index % len(sizes)]) / 2 + widths[index % len(widths)] / 2
            markers.append(Marker(float(x), float(y), points * ax.figure.dpi / 72))
    return markers


def gap(box: Bbox, marker: Marker) -> float:
    """Pixels between ``box`` and the edge of ``marker`` (0 where they touch or overlap)."""
    dx = max(box.x0 - marker.x, 0.0, marker.x - box.x1)
    dy = max(box.y0 - marker.y, 0.0, marker.y - box.y1)
    return max(math.hypot(dx, dy) - marker.radius, 0.0)


def own_marker(markers: Sequence[Marker], x: float, y: float) -> Marker:
    """The marker centred at display point ``(x, y)``, or a point marker there when none is."""
    return next((m for m in markers if math.hypot(m.x - x, m.y - y) < 1.0), Marker(x, y, 0.0))


def misplaced_labels(ax: Axes, renderer: RendererBase, tolerance_px: float = 1.0) -> list[str]:
    """One line per annotation of ``ax`` without a leader line that sits nearer another marker (a
    scatter marker or another annotation's point) than the point it labels."""
    from matplotlib.text import Annotation

    notes = [t for t in ax.texts if isinstance(t, Annotation) and t.get_visible() and t.xycoords == "data"]
    markers = scatter_markers(ax)
    anchors = [tuple(ax.transData.transform(note.xy)) for note in notes]
    markers += [Marker(x, y, 0.0) for x, y in anchors if own_marker(markers, x, y).radius == 0.0]
    problems = []
    for note, (x, y) in zip(notes, anchors, strict=True):
        if note.arrow_patch is not None:
            continue
        box, own = note.get_window_extent(renderer), own_marker(markers, x, y)
        others = [m for m in markers if math.hypot(m.x - x, m.y - y) >= 1.0]
        nearest = min(others, key=lambda m: gap(box, m), default=None)
        if nearest is not None and gap(box, nearest) + tolerance_px < gap(box, own):
            problems.append(
                f"label {note.get_text()!r} sits nearer the marker at pixel ({nearest.x:.0f}, "
                f"{nearest.y:.0f}) than its own at ({own.x:.0f}, {own.y:.0f}) in {ax.get_title()!r}"
            )
    return problems


def box_at(marker: Marker, degrees: float, distance: float, width: float, height: float) -> Bbox:
    """The ``width`` × ``height`` box in direction ``degrees`` from ``marker``, ``distance`` pixels
    clear of its centre."""
    from matplotlib.transforms import Bbox

    cos, sin = math.cos(math.radians(degrees)), math.sin(math.radians(degrees))
    step = 0.0  # pixels from the marker's centre to the box's centre, grown until the box is clear
    while math.hypot(max(abs(cos * step) - width / 2, 0), max(abs(sin * step) - height / 2, 0)) < distance:
        step += 1.0
    x, y = marker.x + cos * step, marker.y + sin * step
    return Bbox.from_extents(x - width / 2, y - height / 2, x + width / 2, y + height / 2)


def segment_clear(marker: Marker, box: Bbox, other: Marker) -> bool:
    """Whether the leader line from ``marker``'s centre to the nearest point of ``box`` misses ``other``."""
    end_x = min(max(marker.x, box.x0), box.x1)
    end_y = min(max(marker.y, box.y0), box.y1)
    dx, dy = end_x - marker.x, end_y - marker.y
    length2 = dx * dx + dy * dy or 1.0
    t = min(max(((other.x - marker.x) * dx + (other.y - marker.y) * dy) / length2, 0.0), 1.0)
    return math.hypot(marker.x + t * dx - other.x, marker.y + t * dy - other.y) > other.radius


@dataclass
class Layout:
    """What a new label must keep clear of: the panel, every marker and the labels placed so far."""

    area: Bbox
    markers: list[Marker]
    placed: list[Bbox]
    gap_px: float

    def free(self, box: Bbox, own: Marker, beside: bool) -> bool:
        """Whether ``box`` fits: inside the panel, over no label or marker; ``beside``: nearer ``own``
        than any other marker, else the leader line from ``own`` misses every other marker."""
        inside = (
            box.x0 >= self.area.x0 + 1
            and box.y0 >= self.area.y0 + 1
            and box.x1 <= self.area.x1 - 1
            and box.y1 <= self.area.y1 - 1
        )
        if not inside or any(box.expanded(1.0, 1.0).overlaps(other) for other in self.placed):
            return False
        others = [m for m in self.markers if m is not own]
        if any(gap(box, m) < self.gap_px / 2 for m in self.markers):
            return False
        if beside:  # clearly nearer its own marker: the others at least three gaps further
            return all(gap(box, own) + 3 * self.gap_px <= gap(box, m) for m in others)
        return all(segment_clear(own, box, m) for m in others)


def place_labels(fig: Figure, ax: Axes, labels: Sequence[tuple[str, float, float]], fontsize: float = 7,
                 gap_px: float = 3.0) -> bool:  # fmt: skip
    """Annotate ``ax`` with each ``(text, x, y)`` (data coordinates of a scatter marker): beside its
    marker where a place is free, else further out with a leader line. Call it once the panel's
    markers, limits and the figure's layout are final. False, with no label left on ``ax``, when some
    label has no free place (the caller lists them otherwise, e.g. in a legend)."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    layout = Layout(ax.get_window_extent(renderer), scatter_markers(ax), [], gap_px)
    points = [(text, *ax.transData.transform((x, y)), x, y) for text, x, y in labels]
    owners = {index: own_marker(layout.markers, px, py) for index, (_, px, py, _, _) in enumerate(points)}

    def crowding(index: int) -> float:  # the distance to the nearest other marker: crowded first
        own = owners[index]
        others = [math.hypot(m.x - own.x, m.y - own.y) for m in layout.markers if m is not own]
        return min(others, default=0.0)

    notes = []
    for index in sorted(owners, key=crowding):
        text, _, _, x, y = points[index]
        own = owners[index]
        probe = ax.text(0, 0, text, fontsize=fontsize)
        extent = probe.get_window_extent(renderer)
        probe.remove()
        place = find_place(layout, own, extent.width, extent.height)
        if place is None:
            for note in notes:
                note.remove()
            return False
        box, beside = place
        layout.placed.append(box)
        offset = ((box.x0 + box.x1) / 2 - own.x, (box.y0 + box.y1) / 2 - own.y)
        arrow = None if beside else {"arrowstyle": "-", "lw": 0.7, "color": "0.3", "shrinkA": 0,
                                     "shrinkB": own.radius * 72 / fig.dpi}  # fmt: skip
        note = ax.annotate(
            text, (x, y), xytext=(offset[0] * 72 / fig.dpi, offset[1] * 72 / fig.dpi),
            textcoords="offset points", ha="center", va="center", fontsize=fontsize, arrowprops=arrow,
        )  # fmt: skip
        note.set_in_layout(False)
        notes.append(note)
    return True


def find_place(layout: Layout, own: Marker, width: float, height: float) -> tuple[Bbox, bool] | None:
    """A free ``width`` × ``height`` box for ``own``'s label and whether it sits beside the marker
    (False: further out, with a leader line); None when no place is free."""
    for degrees in BESIDE_DEGREES:
        box = box_at(own, degrees, own.radius + layout.gap_px, width, height)
        if layout.free(box, own, beside=True):
            return box, True
    first = own.radius + layout.gap_px
    rings = [first + ring * (height + layout.gap_px) for ring in range(1, LEADER_RINGS + 1)]
    candidates = (box_at(own, degrees, ring, width, height) for ring in rings for degrees in LEADER_DEGREES)
    box = next((box for box in candidates if layout.free(box, own, beside=False)), None)
    return None if box is None else (box, False)
