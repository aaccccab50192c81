"""File writers shared by the benchmarks: CSV rows, and figures drawn without a display."""

from __future__ import annotations

import csv
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def number(value: float | None, fmt: str) -> str:
    """``value`` formatted with ``fmt``, or an empty cell for None (a row without that figure)."""
    return "" if value is None else format(value, fmt)


def write_csv(path: Path, header: Sequence[str], rows: Iterable[Sequence[object]]) -> None:
    """``header`` then ``rows``, ``\\n`` line endings."""
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)


def pyplot() -> ModuleType:
    """``matplotlib.pyplot`` on the Agg backend (files only, no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig: Figure, path: Path) -> None:
    """Lay out ``fig``, write it to ``path`` (the format from its suffix) and free it."""
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    pyplot().close(fig)
