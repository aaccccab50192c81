"""What the efficiency benchmark writes: ``efficiency_<device>[_<scope>].csv``, the page
``efficiency_<device>.md`` (time, memory, ratios to the baselines, memory growth, the published
one-layer figures) and the plot ``efficiency_<device>.png`` (time and memory against length, log–log)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch

from lra.bench.baselines import NAIVE
from lra.bench.efficiency_paper import published_section
from lra.bench.efficiency_workloads import PRIME_SEQ_LEN
from lra.bench.isolation import isolation_note
from lra.bench.output import Outputs
from lra.plotting import agg_pyplot, attention_color, legend_below, log_axis, log_axis_at
from lra.provenance import markdown_table

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from lra.bench.efficiency import Measurement

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
MEMORY_METHODS = {
    "cpu": f"peak RSS (VmHWM, reset via /proc/self/clear_refs) above the RSS {BASELINE_POINT}.",
    "cuda": f"torch.cuda.max_memory_allocated above memory_allocated {BASELINE_POINT}.",
}


def csv_suffix(scope: str) -> str:
    """``efficiency_<device>.csv`` for the layer, ``efficiency_<device>_<scope>.csv`` otherwise."""
    return ".csv" if scope == "layer" else f"_{scope}.csv"


def _lookup(rows: Sequence[Measurement]) -> dict[tuple[str, int], Measurement]:
    return {(row.attention, row.seq_len): row for row in rows}


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
    table = _lookup(rows)

    def cell(name: str, n: int, field: str, fmt: str) -> str:
        row = table.get((name, n))
        if row is None:
            return ""
        if row.status != "ok":
            return row.status
        fewer = f" ({row.timed_steps}×)" if field == "time_ms" and row.timed_steps < repeats else ""
        return format(getattr(row, field), fmt) + fewer

    header = ["attention", *(f"n={n}" for n in lengths)]
    parts = [
        "Time per forward+backward (ms, median):",
        markdown_table(header, [[a, *(cell(a, n, "time_ms", ".1f") for n in lengths)] for a in attentions]),
        "Peak memory above baseline (MB):",
        markdown_table(
            header, [[a, *(cell(a, n, "peak_mem_mb", ".1f") for n in lengths)] for a in attentions]
        ),
    ]
    for baseline in BASELINES:
        ratio_rows = []
        for name in attentions:
            ratios = []
            for n in lengths:
                row, base = table.get((name, n)), table.get((baseline, n))
                ratios.append(
                    ""
                    if row is None
                    else f"{_ratio(base, row, 'time_ms')} / {_ratio(base, row, 'peak_mem_mb')}"
                )
            ratio_rows.append([name, *ratios])
        parts += [
            f"Ratio to `{baseline}` (its time ÷ this time / its memory ÷ this memory; ×k = k times less):",
            markdown_table(header, ratio_rows),
        ]
    pairs = [(n // 8, n) for n in lengths if n // 8 in lengths and n % 8 == 0]
    if pairs:
        growth_rows = []
        for name in attentions:
            growth = []
            for short, long in pairs:
                a, b = table.get((name, short)), table.get((name, long))
                ok = a is not None and b is not None and a.status == b.status == "ok" and a.peak_mem_mb > 0
                growth.append(f"×{b.peak_mem_mb / a.peak_mem_mb:.3g}" if ok else "—")
            growth_rows.append([name, *growth])
        parts += [
            "Memory growth for ×8 length (linear: ×8, quadratic: ×64):",
            markdown_table(["attention", *(f"{s}→{n}" for s, n in pairs)], growth_rows),
        ]
    failures = [row for row in rows if row.status != "ok"]
    if failures:
        parts += ["Configurations without a figure:"]
        parts += [
            f"- `{r.attention}` n={r.seq_len}: {r.status} ({' '.join(r.detail.split())})" for r in failures
        ]
    return "\n\n".join(parts)


def method_note(settings: argparse.Namespace, device: torch.device) -> str:
    """How each configuration was timed and its memory measured, and where it ran."""
    return (
        f"{settings.warmup} warm-up step(s) then the median of {settings.repeats} timed steps (fewer, at "
        f"least one, once they add up to {settings.time_budget_s:g} s). Memory: "
        f"{MEMORY_METHODS[device.type]} {isolation_note(settings)}; torch threads per measurement: "
        f"{settings.threads or 'torch default'}."
    )


def page(
    rows_by_scope: dict[str, list[Measurement]], settings: argparse.Namespace, device: torch.device
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
        method_note(settings, device),
    ]
    sections = []
    for scope, rows in rows_by_scope.items():
        attentions = list(dict.fromkeys(row.attention for row in rows))
        sections.append(
            f"## {scope}\n\n" + scope_tables(rows, settings.lengths, attentions, settings.repeats)
        )
    sections.append("## Published, for comparison\n\n" + published_section())
    return f"Efficiency on {device.type}", paragraphs, sections


def plot_where(settings: argparse.Namespace, device: torch.device) -> str:
    """Where and how the plotted figures were measured, for the plot's title."""
    count = settings.threads
    threads = f"{count} torch thread{'s' * (count != 1)}" if count else "torch's default threads"
    return f"{device.type}, batch {settings.batch}, dim {settings.dim}, {settings.heads} heads, {threads}"


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


PLOTTED = {"time_ms": "time per step (ms, median)", "peak_mem_mb": "peak memory above baseline (MB)"}


def efficiency_figure(rows_by_scope: dict[str, list[Measurement]], where: str) -> Figure:
    """Log–log: one row of panels per scope, time and memory against length, one colour per attention
    (dashed: the baselines); an attention that stopped (oom, timeout, error) says where in the legend."""
    plt = agg_pyplot()
    all_rows = [row for rows in rows_by_scope.values() for row in rows]
    names = list(dict.fromkeys(row.attention for row in all_rows))
    labels = {name: name + stop_note([r for r in all_rows if r.attention == name]) for name in names}
    fig, axes = plt.subplots(
        len(rows_by_scope), 2, figsize=(11, 3.6 * len(rows_by_scope) + 1.2), squeeze=False,
        layout="constrained",
    )  # fmt: skip
    fig.suptitle(f"Forward+backward time and peak memory against sequence length ({where})", fontsize=11)
    for (scope, rows), panel_row in zip(rows_by_scope.items(), axes, strict=True):
        lengths = sorted({row.seq_len for row in rows})
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
            if ax.has_data():
                log_axis_at(ax, "x", lengths)
                log_axis(ax, "y")
            ax.grid(True, which="both", alpha=0.3)
    legend_below(fig, list(axes.flat), max_columns=6)
    return fig


def write_plot(
    outputs: Outputs,
    rows_by_scope: dict[str, list[Measurement]],
    settings: argparse.Namespace,
    device: torch.device,
) -> None:
    """``<stem>.png`` and ``.svg``: ``efficiency_figure`` of the measured rows."""
    outputs.write_figure(efficiency_figure(rows_by_scope, plot_where(settings, device)))
