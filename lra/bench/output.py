"""The one writer of every benchmark: ``<out>/<benchmark>_<device>.{csv,md,png}`` with their provenance
(``lra.provenance``: the machine, the load, the command that reruns it, taken before any measurement);
``--out`` (``DEFAULT_OUT`` unless given) as docs/benchmarks.md says. Every page reads: the title, the
paragraphs, the provenance lines, the sections. Figures are grids of log–log panels (``panel_grid``,
``log_log``); tables of a row per name (``name_table``)."""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lra.bench.options import option
from lra.config.paths import writable_folder
from lra.provenance import machine_description, markdown_table, rerun_command
from lra.results.plotting import agg_pyplot, log_axis, log_axis_at, save_figure

if TYPE_CHECKING:
    import numpy as np
    import torch
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

DEFAULT_OUT = Path("outputs") / "bench"


def out_option(files: str) -> Any:
    """The ``--out FOLDER`` settings field of a command that writes ``files`` (``efficiency_<device>.*``)."""
    folder = f"folder for {files} (default: {DEFAULT_OUT}; --out results writes the project's own results/)"
    return option(type=Path, default=DEFAULT_OUT, help=folder)


def number(value: float | None, fmt: str) -> str:
    """``value`` formatted with ``fmt``, or an empty cell for None (a row without that figure)."""
    return "" if value is None else format(value, fmt)


def failures(rows: Iterable[Any], name: Callable[[Any], str]) -> list[str]:
    """A page section: a line per row that is not ``ok`` (its ``name(row)``, status and detail)."""
    lines = [f"- {name(r)}: {r.status} ({' '.join(r.detail.split())})" for r in rows if r.status != "ok"]
    return ["Configurations without a figure:\n\n" + "\n".join(lines)] if lines else []


def name_table(
    corner: str, names: Iterable[str], columns: Mapping[str, Any], cell: Callable[..., str]
) -> str:
    """Markdown: a row per name and a column per ``columns`` header, each cell ``cell(name, its key)``."""
    body = [[name, *(cell(name, key) for key in columns.values())] for name in names]
    return markdown_table([corner, *columns], body)


def panel_grid(rows: int, title: str) -> tuple[Figure, np.ndarray]:
    """A figure of ``rows`` × 2 panels (constrained layout) under ``title``."""
    size = (11, 3.6 * rows + 1.2)
    fig, axes = agg_pyplot().subplots(rows, 2, figsize=size, squeeze=False, layout="constrained")
    fig.suptitle(title, fontsize=11)
    return fig, axes


def log_log(ax: Axes, ticks: Sequence[float]) -> None:
    """Log axes with x ticks at ``ticks`` (a panel with data), and a grid."""
    if ax.has_data():
        log_axis_at(ax, "x", ticks)
        log_axis(ax, "y")
    ax.grid(True, which="both", alpha=0.3)


@dataclass(frozen=True)
class Outputs:
    """The files of one run: ``folder / (stem + suffix)``; ``provenance``: markdown bullet lines."""

    folder: Path
    stem: str
    provenance: list[str]

    @classmethod
    def start(cls, folder: Path, benchmark: str, device: torch.device, argv: Sequence[str]) -> Outputs:
        """``<benchmark>_<device type>`` in ``folder`` (created; ``OutputFolderError`` when it cannot be),
        the machine as it is now and the command ``python -m lra.bench ARGV``."""
        writable_folder(folder, "--out")
        command = f"- command: `{rerun_command('lra.bench', argv)}`"
        return cls(folder, f"{benchmark}_{device.type}", [*machine_description(device), command])

    def path(self, suffix: str) -> Path:
        return self.folder / f"{self.stem}{suffix}"

    def write_csv(self, columns: Mapping[str, str], rows: Iterable[object], suffix: str = ".csv") -> None:
        """One line per row: the attribute of each column formatted with its format spec."""
        with self.path(suffix).open("w", newline="") as handle:
            writer = csv.writer(handle, lineterminator="\n")
            writer.writerow(columns)
            writer.writerows(
                [number(getattr(row, name), fmt) for name, fmt in columns.items()] for row in rows
            )

    def write_page(
        self, title: str, paragraphs: Sequence[str], sections: Sequence[str], notes: Sequence[str] = ()
    ) -> None:
        """``<stem>.md``: ``# title``, the paragraphs, the provenance lines and ``notes`` (more bullet
        lines), the sections; blocks apart by one empty line."""
        blocks = [f"# {title}", *paragraphs, "\n".join([*self.provenance, *notes]), *sections]
        self.path(".md").write_text("\n\n".join(blocks) + "\n")

    def write_figure(self, fig: Figure) -> None:
        """Write ``fig`` (laid out by its own layout engine) to ``<stem>.png`` and free it."""
        save_figure(fig, self.path(".png"), formats=(".png",))

    def announce(self, suffixes: str) -> None:
        print(f"wrote {self.folder}/{self.stem}.{{{suffixes}}}")
