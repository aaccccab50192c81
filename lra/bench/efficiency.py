"""``python -m lra.bench efficiency``: time and peak memory of forward+backward against sequence length
(each configuration: ``lra.bench.efficiency_measure``), a CSV per scope, a page (per scope: time, memory,
ratios to the baselines, memory growth; then the published one-layer figures) and a plot; with
``--paper``, a published table's own setting in its layout (``lra.bench.efficiency_paper``)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from lra.bench import efficiency_measure, efficiency_paper
from lra.bench.efficiency_measure import NAIVE, WORKLOADS, BenchConfig, Measurement, bench_names
from lra.bench.efficiency_paper import PAPER_TABLES, PaperTable
from lra.bench.measuring import PROBES, Isolation, add_run_arguments
from lra.bench.memory_growth import GROWTH_TITLE, growth_table
from lra.bench.options import arguments, option, settings_of
from lra.bench.output import Outputs, failures, log_log, name_table, out_option, panel_grid
from lra.results.plotting import attention_color, legend_below, legend_entries

if TYPE_CHECKING:
    from matplotlib.figure import Figure

HELP = "time and peak memory of forward+backward against sequence length"
DEFAULTS = {
    "lengths": (512, 1024, 2048, 4096, 8192, 16384), "scopes": ("layer", "encoder"), "batch": 1, "dim": 64,
    "heads": 2,
}  # fmt: skip
CSV_COLUMNS = {  # attribute -> format
    "attention": "", "seq_len": "", "batch": "", "time_ms": ".3f", "peak_mem_mb": ".2f", "status": ""
}  # fmt: skip
BASELINES = ("standard", NAIVE)
PLOTTED = {"time_ms": "time per step (ms, median)", "peak_mem_mb": "peak memory above baseline (MB)"}


@dataclass(frozen=True)
class Settings:
    """A run; ``rows``: each attention with its options and label, the others unset. An option without a
    default takes ``paper``'s setting where it has one, else ``DEFAULTS``."""

    paper: PaperTable | None = option(
        choices=sorted(PAPER_TABLES), help="measure a published table's own setting and rows"
    )
    rows: tuple[BenchConfig, ...] = option(
        "--attentions", nargs="+", metavar="ATTENTIONS", help="default: every core and the naive baseline"
    )
    lengths: tuple[int, ...] = option(nargs="+", type=int, help=f"default: {DEFAULTS['lengths']}")
    scopes: tuple[str, ...] = option(nargs="+", choices=sorted(WORKLOADS), help="default: layer encoder")
    batch: int = option(type=int, help=f"default: {DEFAULTS['batch']}")
    dim: int = option(type=int, help=f"default: {DEFAULTS['dim']}")
    heads: int = option(type=int, help=f"default: {DEFAULTS['heads']}")
    warmup: int = option(type=int, default=1)
    repeats: int = option(type=int, default=5)
    time_budget_s: float = option(
        type=float, default=30.0, help="stop repeating once the timed steps add up to this"
    )
    max_step_s: float | None = option(
        type=float, help="skip an attention's longer lengths once one step took longer"
    )
    run: Isolation = arguments(partial(add_run_arguments, timeout_s=300))
    out: Path = out_option("efficiency_<device>.* (or the --paper table's)")


def settings_from(args: argparse.Namespace) -> Settings:
    paper = PAPER_TABLES[args.paper] if args.paper else None
    if paper is not None and (args.rows or args.scopes):
        raise ValueError(
            f"--paper {args.paper} measures its own rows and workload: drop --attentions/--scopes"
        )
    unknown = [name for name in args.rows or [] if name not in bench_names()]
    if unknown:
        raise ValueError(f"unknown attention(s) {unknown}; valid: {', '.join(bench_names())}")
    given = {key: getattr(args, key) for key in DEFAULTS if getattr(args, key) is not None}
    chosen = {**DEFAULTS, **(paper.settings if paper else {}), **given}
    if chosen["dim"] % chosen["heads"]:
        raise ValueError(f"--dim ({chosen['dim']}) must be divisible by --heads ({chosen['heads']})")
    rows = paper.rows if paper else tuple(BenchConfig(name, 0) for name in args.rows or bench_names())
    chosen["lengths"] = sorted(chosen["lengths"])
    return settings_of(Settings, args, **chosen, rows=rows, run=Isolation.from_args(args), paper=paper)


def scope_tables(rows: Sequence[Measurement], lengths: Sequence[int], repeats: int) -> str:
    """Markdown: time, memory, ratios to both baselines and memory growth for one scope."""
    table = {(row.attention, row.seq_len): row for row in rows}
    ok = {key: row for key, row in table.items() if row.status == "ok"}
    attentions = list(dict.fromkeys(row.attention for row in rows))

    def figure(name: str, n: int, field: str) -> str:
        row = table.get((name, n))
        if row is None or row.status != "ok":
            return "" if row is None else row.status
        fewer = f" ({row.timed_steps}×)" if field == "time_ms" and row.timed_steps < repeats else ""
        return f"{getattr(row, field):.1f}{fewer}"

    def ratios(name: str, n: int, baseline: str) -> str:
        """The baseline's time and memory ÷ this row's (``×k`` = k times less), or '—'."""
        base, row = ok.get((baseline, n)), ok.get((name, n))
        cells = [
            f"×{getattr(base, f) / getattr(row, f):.3g}" if base and row and getattr(row, f) > 0 else "—"
            for f in PLOTTED
        ]
        return " / ".join(cells) if (name, n) in table else ""

    def growth(name: str, n: int) -> str:
        """The memory at ``n`` ÷ the memory at ``n / 8``."""
        a, b = ok.get((name, n // 8)), ok.get((name, n))
        return f"×{b.peak_mem_mb / a.peak_mem_mb:.3g}" if a and b and a.peak_mem_mb > 0 else "—"

    fills = {  # the ratio tables of the baselines that were measured
        "Time per forward+backward (ms, median):": partial(figure, field="time_ms"),
        "Peak memory above baseline (MB):": partial(figure, field="peak_mem_mb"),
        **{f"Ratio to `{baseline}` (its time ÷ this time / its memory ÷ this memory; ×k = k times less):":
           partial(ratios, baseline=baseline) for baseline in BASELINES if baseline in attentions},
    }  # fmt: skip
    parts = []
    for title, fill in fills.items():
        parts += [title, name_table("attention", attentions, {f"n={n}": n for n in lengths}, fill)]
    pairs = {f"{n // 8}→{n}": n for n in lengths if n // 8 in lengths and n % 8 == 0}
    if pairs:
        title = "Memory growth for ×8 length (linear: ×8, quadratic: ×64):"
        parts += [title, name_table("attention", attentions, pairs, growth)]
    parts += [GROWTH_TITLE, growth_table(rows)]
    return "\n\n".join(parts + failures(rows, lambda r: f"`{r.attention}` n={r.seq_len}"))


def method_note(settings: Settings) -> str:
    """How each configuration was timed and its memory measured, and where it ran."""
    probe = PROBES[settings.run.device.type]
    return (
        f"{settings.warmup} warm-up step(s) then the median of {settings.repeats} timed steps (fewer, at "
        f"least one, once they add up to {settings.time_budget_s:g} s). Memory: {probe.method} above "
        f"{probe.baseline} after the model and inputs were built and one step of the same workload at "
        f"{efficiency_measure.PRIME_SEQ_LEN} tokens ran (one-time costs such as kernel code paged in on "
        f"first use are not counted). {settings.run.note()}."
    )


def page(rows_by_scope: dict[str, list[Measurement]], settings: Settings) -> tuple[str, list[str], list[str]]:
    """The page's title, paragraphs and sections: one per scope, then the published figures (with
    ``--paper``, that paper's page)."""
    if settings.paper is not None:
        [rows] = rows_by_scope.values()
        return efficiency_paper.page(settings.paper, rows, settings.run.device.type, [method_note(settings)])
    inference = " `inference`: the layer's forward alone, under torch.inference_mode." * (
        "inference" in rows_by_scope
    )
    paragraphs = [
        "Forward+backward of one attention layer (`layer`: MultiHeadSelfAttention, dim "
        f"{settings.dim}, {settings.heads} heads; a mixer such as `s4d` or `mamba` in its place) and of "
        f"the whole encoder (`encoder`: LRAClassifier), batch {settings.batch}.{inference} `naive` is "
        "softmax attention with QKᵀ materialised (the papers' Transformer); `standard` is PyTorch's "
        "scaled_dot_product_attention. Each attention keeps its paper defaults (options in "
        "docs/attentions.md). `(k×)` in the time table: k timed steps.",
        method_note(settings),
    ]
    sections = [
        f"## {scope}\n\n" + scope_tables(rows, settings.lengths, settings.repeats)
        for scope, rows in rows_by_scope.items()
    ]
    sections.append("## Published, for comparison\n\n" + efficiency_paper.published_section())
    return f"Efficiency on {settings.run.device.type}", paragraphs, sections


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
    legend_below(fig, legend_entries(list(axes.flat)), max_columns=6)
    return fig


def run(settings: Settings, argv: Sequence[str]) -> None:
    paper, stem = settings.paper, settings.paper.stem if settings.paper else "efficiency"
    outputs = Outputs.start(settings.out, stem, settings.run.device, argv)
    run_one = partial(settings.run.measure, efficiency_measure.measure, Measurement.of)
    shape = {k: getattr(settings, k) for k in ("batch", "dim", "heads", "warmup", "repeats", "time_budget_s")}
    shape["device"] = str(settings.run.device)
    rows_by_scope: dict[str, list[Measurement]] = {}
    for scope in settings.scopes:
        shape["scope"] = scope
        configs = [replace(row, seq_len=n, **shape) for row in settings.rows for n in settings.lengths]
        rows = rows_by_scope[scope] = efficiency_measure.sweep(configs, run_one, settings.max_step_s)
        if paper:  # a published table's one workload, its rows named by its labels
            outputs.write_csv({"label": "", **CSV_COLUMNS}, rows)
        else:  # each scope's CSV as soon as it is measured
            outputs.write_csv(CSV_COLUMNS, rows, ".csv" if scope == "layer" else f"_{scope}.csv")
    outputs.write_page(*page(rows_by_scope, settings))
    if not paper:
        count = settings.run.threads
        threads = f"{count} torch thread{'s' * (count != 1)}" if count else "torch's default threads"
        where = f"batch {settings.batch}, dim {settings.dim}, {settings.heads} heads, {threads}"
        outputs.write_figure(efficiency_figure(rows_by_scope, f"{settings.run.device.type}, {where}"))
    outputs.announce("csv,md" if paper else "csv,md,png")
