"""``python -m lra.bench efficiency --paper NAME``: a published efficiency table's own setting
(``PAPER_TABLES``), measured here and written in the paper's layout beside the paper's figures."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from lra.bench.efficiency_measure import NAIVE, BenchConfig, Measurement
from lra.bench.output import failures, name_table
from lra.results.published_costs import LAYER_COST, LAYER_COST_LENGTHS, LAYER_COST_PAPER

Figures = tuple[float, float] | str  # (memory MB, time ms), or the status of a row without figures


@dataclass(frozen=True)
class PaperTable:
    """A published table's setting: its rows (each an attention with options, named by its label) and
    the efficiency settings that reproduce it (lengths, scopes, batch, dim, heads)."""

    title: str
    stem: str
    setting: str
    rows: tuple[BenchConfig, ...]
    settings: Mapping[str, object]


PAPER_TABLES = {
    "nystromformer-table1": PaperTable(
        title="Nyströmformer Table 1",
        stem="nystromformer_table1",
        setting=(
            "Nyströmformer paper, Table 1: one self-attention layer, inference (the forward alone, under "
            "`torch.inference_mode`, layer in eval mode), per input instance (batch 1). Model size: "
            "BERT-base's hidden 768 in 12 heads of 64, assumed (the paper's Transformer row, 10.2 GB at "
            "n = 8192, holds 12 heads of n² fp32 scores a few times over; 2 heads would not reach it). "
            "Transformer = softmax with QKᵀ materialised (`naive`); the others are this zoo's cores with "
            "their defaults but for the option the label names."
        ),
        rows=tuple(  # the published rows' cores; the Transformer is the naive softmax, as the paper's
            BenchConfig(NAIVE if cost.attention == "standard" else cost.attention, 0, options=cost.options,
                        label=cost.label)
            for cost in {cost.label: cost for cost in LAYER_COST}.values()
        ),
        settings={"lengths": LAYER_COST_LENGTHS, "scopes": ("inference",), "batch": 1, "dim": 768,
                  "heads": 12},
    )
}  # fmt: skip


def _figure(value: float) -> str:
    """Two decimals below 1, one below 100, none above: as many digits as the paper prints."""
    return f"{value:.2f}" if value < 1 else f"{value:.1f}" if value < 100 else f"{value:.0f}"


def layout_table(
    figures: Mapping[tuple[str, int], Figures],
    labels: Sequence[str],
    lengths: Sequence[int],
    show: Callable[[float], str] = _figure,
) -> str:
    """Markdown in the paper's layout: a row per label, a column per length, cells ``memory / time``
    (each figure written by ``show``) with ×-factors to the first label's row at the same length."""

    def cell(label: str, n: int) -> str:
        mine, reference = figures.get((label, n)), figures.get((labels[0], n))
        if mine is None or isinstance(mine, str):
            return mine or "—"
        if label == labels[0] or reference is None or isinstance(reference, str):
            return " / ".join(map(show, mine))
        factors = [f"×{_figure(r / m)}" if m > 0 else "—" for r, m in zip(reference, mine, strict=True)]
        return " / ".join(f"{show(m)} ({factor})" for m, factor in zip(mine, factors, strict=True))

    return name_table("memory (MB) / time (ms)", labels, {f"n={n}": n for n in lengths}, cell)


def published_section(labels: Sequence[str] | None = None) -> str:
    """The paper's Table 1 in its layout (every label it has, in its order, unless ``labels``)."""
    figures = {(cost.label, cost.seq_len): (cost.memory_mb, cost.time_ms) for cost in LAYER_COST}
    labels = labels or list(dict.fromkeys(label for label, _ in figures))
    lengths = sorted({n for _, n in figures})
    return f"{LAYER_COST_PAPER}:\n\n" + layout_table(figures, labels, lengths, show="{:g}".format)


def page(
    table: PaperTable, rows: Sequence[Measurement], device_type: str, notes: Sequence[str]
) -> tuple[str, list[str], list[str]]:
    """The page: the setting, how it was measured (``notes``), our table, the paper's, the failures."""
    labels = [row.label for row in table.rows]
    figures: dict[tuple[str, int], Figures] = {
        (row.name, row.seq_len): (row.peak_mem_mb, row.time_ms) if row.status == "ok" else row.status
        for row in rows
    }
    sections = [
        f"## Measured here ({device_type})\n\n"
        + layout_table(figures, labels, sorted({r.seq_len for r in rows})),
        "## Published\n\n" + published_section(labels),
        *failures(rows, lambda r: f"{r.name} n={r.seq_len}"),
    ]
    return f"{table.title} on {device_type}", [table.setting, *notes], sections
