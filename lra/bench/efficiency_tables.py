"""A run of the efficiency benchmark (``EfficiencySettings``) and what it writes from its rows:
``efficiency_<device>[_<scope>].csv``, the page ``efficiency_<device>.md`` (time, memory, ratios to the
baselines, memory growth, the published one-layer figures) and the plot ``efficiency_<device>.png``
(time and memory against length, log–log)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lra.bench.baselines import NAIVE
from lra.bench.efficiency_measure import PRIME_SEQ_LEN, Measurement
from lra.bench.efficiency_paper import PaperRow, PaperTable, published_section
from lra.bench.isolation import Isolation
from lra.bench.output import failures, log_log, panel_grid
from lra.bench.timing import PROBES
from lra.plotting import attention_color, legend_below
from lra.provenance import markdown_table

if TYPE_CHECKING:
    from matplotlib.figure import Figure

CSV_COLUMNS = {
    "attention": "",
    "seq_len": "",
    "batch": "",
    "time_ms": ".3f",
    "peak_mem_mb": ".2f",
    "status": "",
}
BASELINES = ("standard", NAIVE)
BASELINE_POINT = (
    "after the model and inputs were built and one step of the same workload at "
    f"{PRIME_SEQ_LEN} tokens ran (one-time costs such as kernel code paged in on first use are not counted)"
)
PLOTTED = {"time_ms": "time per step (ms, median)", "peak_mem_mb": "peak memory above baseline (MB)"}


@dataclass(frozen=True)
class EfficiencySettings:
    """A run: ``rows`` (what is measured) at ``lengths`` in each of ``scopes``, the model's shape, the
    timing, where (``run``) and the output folder; ``paper``: the published table it measures, if any."""

    rows: tuple[PaperRow, ...]
    lengths: tuple[int, ...]
    scopes: tuple[str, ...]
    batch: int
    dim: int
    heads: int
    warmup: int
    repeats: int
    time_budget_s: float
    max_step_s: float | None
    run: Isolation
    out: Path
    paper: PaperTable | None = None


def csv_suffix(scope: str) -> str:
    """``efficiency_<device>.csv`` for the layer, ``efficiency_<device>_<scope>.csv`` otherwise."""
    return ".csv" if scope == "layer" else f"_{scope}.csv"


def _ratio(baseline: Measurement | None, row: Measurement, field: str) -> str:
    """baseline ÷ row for ``field`` (``×k`` = k times less), or '—' when either is missing."""
    if baseline is None or baseline.status != "ok" or row.status != "ok":
        return "—"
    mine, theirs = getattr(row, field), getattr(baseline, field)
    return f"×{theirs / mine:.3g}" if mine > 0 else "—"


def scope_tables(
    rows: Sequence[Measurement], lengths: Sequence[int], attentions: Sequence[str], repeats: int
) -> str:
    """Markdown: time, memory, ratios to both baselines and memory growth for one scope."""
    table = {(row.attention, row.seq_len): row for row in rows}

    def cell(name: str, n: int, field: str) -> str:
        row = table.get((name, n))
        if row is None or row.status != "ok":
            return "" if row is None else row.status
        fewer = f" ({row.timed_steps}×)" if field == "time_ms" and row.timed_steps < repeats else ""
        return f"{getattr(row, field):.1f}{fewer}"

    def ratios(name: str, n: int, baseline: str) -> str:
        row, base = table.get((name, n)), table.get((baseline, n))
        return "" if row is None else f"{_ratio(base, row, 'time_ms')} / {_ratio(base, row, 'peak_mem_mb')}"

    def growth(name: str, short: int, long: int) -> str:
        a, b = table.get((name, short)), table.get((name, long))
        ok = a is not None and b is not None and a.status == b.status == "ok" and a.peak_mem_mb > 0
        return f"×{b.peak_mem_mb / a.peak_mem_mb:.3g}" if ok else "—"

    header = ["attention", *(f"n={n}" for n in lengths)]
    parts = []
    for title, field in (("Time per forward+backward (ms, median):", "time_ms"),
                         ("Peak memory above baseline (MB):", "peak_mem_mb")):  # fmt: skip
        parts += [
            title,
            markdown_table(header, [[a, *(cell(a, n, field) for n in lengths)] for a in attentions]),
        ]
    for baseline in BASELINES:
        parts += [
            f"Ratio to `{baseline}` (its time ÷ this time / its memory ÷ this memory; ×k = k times less):",
            markdown_table(header, [[a, *(ratios(a, n, baseline) for n in lengths)] for a in attentions]),
        ]
    pairs = [(n // 8, n) for n in lengths if n // 8 in lengths and n % 8 == 0]
    if pairs:
        parts += [
            "Memory growth for ×8 length (linear: ×8, quadratic: ×64):",
            markdown_table(
                ["attention", *(f"{s}→{n}" for s, n in pairs)],
                [[a, *(growth(a, s, n) for s, n in pairs)] for a in attentions],
            ),
        ]
    return "\n\n".join(parts + failures(rows, lambda r: f"`{r.attention}` n={r.seq_len}"))


def method_note(settings: EfficiencySettings) -> str:
    """How each configuration was timed and its memory measured, and where it ran."""
    probe = PROBES[settings.run.device.type]
    return (
        f"{settings.warmup} warm-up step(s) then the median of {settings.repeats} timed steps (fewer, at "
        f"least one, once they add up to {settings.time_budget_s:g} s). Memory: {probe.method} above "
        f"{probe.baseline} {BASELINE_POINT}. {settings.run.note()}."
    )


def page(
    rows_by_scope: dict[str, list[Measurement]], settings: EfficiencySettings
) -> tuple[str, list[str], list[str]]:
    """The page's title, paragraphs and sections (one per scope, then the published figures)."""
    inference = " `inference`: the layer's forward alone, under torch.inference_mode." * (
        "inference" in rows_by_scope
    )
    paragraphs = [
        "Forward+backward of one attention layer (`layer`: MultiHeadSelfAttention, dim "
        f"{settings.dim}, {settings.heads} heads) and of the whole encoder (`encoder`: LRAClassifier), "
        f"batch {settings.batch}.{inference} `naive` is softmax attention with QKᵀ materialised (the papers' "
        "Transformer); `standard` is PyTorch's scaled_dot_product_attention. Each attention keeps its "
        "paper defaults (options in README.md, section The attention zoo). `(k×)` in the time table: "
        "k timed steps.",
        method_note(settings),
    ]
    sections = []
    for scope, rows in rows_by_scope.items():
        attentions = list(dict.fromkeys(row.attention for row in rows))
        sections.append(
            f"## {scope}\n\n" + scope_tables(rows, settings.lengths, attentions, settings.repeats)
        )
    sections.append("## Published, for comparison\n\n" + published_section())
    return f"Efficiency on {settings.run.device.type}", paragraphs, sections


def plot_where(settings: EfficiencySettings) -> str:
    """Where and how the plotted figures were measured, for the plot's title."""
    count = settings.run.threads
    threads = f"{count} torch thread{'s' * (count != 1)}" if count else "torch's default threads"
    where = f"{settings.run.device.type}, batch {settings.batch}, dim {settings.dim}"
    return f"{where}, {settings.heads} heads, {threads}"


def stop_note(rows: Sequence[Measurement]) -> str:
    """Where each scope's run of one attention stopped, e.g. `` (oom at 16384)``, or
    `` (layer: oom at 16384; encoder: timeout at 8192)`` when the scopes differ; empty when it never did."""
    scopes = list(dict.fromkeys(row.scope for row in rows))
    stops = {}
    for row in sorted(rows, key=lambda r: (scopes.index(r.scope), r.seq_len)):
        if row.status not in ("ok", "skipped"):
            stops.setdefault(row.scope, f"{row.status} at {row.seq_len}")
    distinct = set(stops.values())
    if len(distinct) == 1 and len(stops) == len(scopes):  # alike in every scope
        return f" ({distinct.pop()})"
    return f" ({'; '.join(f'{scope}: {stop}' for scope, stop in stops.items())})" if stops else ""


def efficiency_figure(rows_by_scope: dict[str, list[Measurement]], where: str) -> Figure:
    """Log–log: one row of panels per scope, time and memory against length, one colour per attention
    (dashed: the baselines); an attention that stopped (oom, timeout, error) says where in the legend."""
    all_rows = [row for rows in rows_by_scope.values() for row in rows]
    names = list(dict.fromkeys(row.attention for row in all_rows))
    labels = {name: name + stop_note([r for r in all_rows if r.attention == name]) for name in names}
    title = f"Forward+backward time and peak memory against sequence length ({where})"
    fig, axes = panel_grid(len(rows_by_scope), title)
    for (scope, rows), panel_row in zip(rows_by_scope.items(), axes, strict=True):
        for ax, (field, quantity) in zip(panel_row, PLOTTED.items(), strict=True):
            for name in dict.fromkeys(row.attention for row in rows):
                points = sorted(
                    (r.seq_len, getattr(r, field))
                    for r in rows
                    if r.attention == name and r.status == "ok" and getattr(r, field) > 0  # log axes
                )
                if points:
                    ax.plot(
                        *zip(*points, strict=True), label=labels[name], color=attention_color(name),
                        linestyle="--" if name in BASELINES else "-", marker="o", markersize=4,
                    )  # fmt: skip
            ax.set(xlabel="sequence length", ylabel=quantity, title=f"{scope}: {quantity}")
            log_log(ax, sorted({row.seq_len for row in rows}))
    legend_below(fig, list(axes.flat), max_columns=6)
    return fig
