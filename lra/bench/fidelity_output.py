"""The fidelity benchmark's files: ``fidelity_<device>.csv``, ``fidelity_<device>.md`` (mean ± std of
the error per core and budget against length, per input source) and ``fidelity_<device>.png`` (error
against budget at the longest length, and against length at the middle budget)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import astuple, fields
from pathlib import Path

import torch

from lra.bench.fidelity_measure import FidelityRow
from lra.bench.writers import number, pyplot, save_figure, write_csv
from lra.report.provenance import machine_description, markdown_table

CSV_COLUMNS = tuple(field.name for field in fields(FidelityRow))


def csv_values(row: FidelityRow) -> list[object]:
    """``row`` as CSV cells: an empty budget for a core without one, errors to 6 significant digits."""
    values: list[object] = list(astuple(row))
    values[3] = number(row.budget, "d")
    values[6], values[7] = f"{row.error_mean:.6g}", f"{row.error_std:.6g}"
    return values


def write_rows(path: Path, rows: Sequence[FidelityRow]) -> None:
    """One CSV line per row, columns ``CSV_COLUMNS``."""
    write_csv(path, CSV_COLUMNS, map(csv_values, rows))


def plot_budget(budgets: Sequence[int]) -> int:
    """The budget of the error-against-length panel: the middle of the measured budgets."""
    return sorted(budgets)[len(budgets) // 2]


def source_tables(rows: Sequence[FidelityRow], lengths: Sequence[int]) -> str:
    """Markdown: rows = core and budget, columns = lengths, cells = mean ± std of the error."""
    cells = {(r.attention, r.budget, r.seq_len): f"{r.error_mean:.3f} ± {r.error_std:.3f}" for r in rows}
    keys = list(dict.fromkeys((r.attention, r.exact, r.budget_option, r.budget) for r in rows))
    body = [
        [f"{name} vs {exact}", f"{option}={budget}" if option else "defaults",
         *(cells.get((name, budget, n), "") for n in lengths)]
        for name, exact, option, budget in keys
    ]  # fmt: skip
    return markdown_table(["attention", "budget", *(f"n={n}" for n in lengths)], body)


def write_markdown(
    path: Path,
    rows: Sequence[FidelityRow],
    args: argparse.Namespace,
    left_out: Sequence[str],
    device: torch.device,
    command: str,
) -> None:
    lines = [
        f"# Fidelity on {device.type}",
        "",
        "Relative spectral-norm error ‖Â − A‖₂ / ‖A‖₂ of each approximate core's output Â against its exact "
        f"counterpart's A, per (batch, head) matrix of shape (seq_len, {args.head_dim}), {args.heads} heads, "
        f"mean ± std over inputs × batch × heads × seeds {list(args.seeds)}. Random inputs: standard normal "
        f"Q, K, V, batch {args.batch}, one draw per seed. Options other than the budget: paper defaults, "
        f"with overrides {list(args.set)}.",
        "",
        *machine_description(device),
        f"- command: `{command}`",
    ]
    if args.checkpoint:
        lines.append(
            f"- checkpoint: `{args.checkpoint}` (Q, K, V of every attention layer on a validation batch)"
        )
    if left_out:
        lines += ["", "Left out:", *(f"- {note}" for note in left_out)]
    for source in dict.fromkeys(row.source for row in rows):
        lines += [
            "",
            f"## {source} inputs",
            "",
            source_tables([r for r in rows if r.source == source], args.lengths),
        ]
    path.write_text("\n".join(lines) + "\n")


def write_plot(
    path: Path, rows: Sequence[FidelityRow], lengths: Sequence[int], budgets: Sequence[int]
) -> None:
    """Per source: error against budget at the longest length, and against length at the middle budget."""
    plt = pyplot()
    sources = list(dict.fromkeys(row.source for row in rows))
    names = list(dict.fromkeys(row.attention for row in rows))
    colors = {name: f"C{i}" for i, name in enumerate(names)}  # the same colour in every panel
    fig, axes = plt.subplots(len(sources), 2, figsize=(11, 4 * len(sources)), squeeze=False)
    middle = plot_budget(budgets)
    for source, (ax_budget, ax_length) in zip(sources, axes, strict=True):
        mine = [r for r in rows if r.source == source]
        longest = max(r.seq_len for r in mine)
        for name in names:
            at_longest = sorted(
                (r for r in mine if r.attention == name and r.seq_len == longest), key=lambda r: r.budget or 0
            )
            style = {"color": colors[name], "marker": "o"}
            if at_longest and at_longest[0].budget is None:  # no budget option: a level line
                ax_budget.axhline(at_longest[0].error_mean, color=colors[name], linestyle="--", label=name)
            elif at_longest:
                ax_budget.errorbar(
                    [r.budget for r in at_longest], [r.error_mean for r in at_longest],
                    yerr=[r.error_std for r in at_longest], capsize=3, label=name, **style,
                )  # fmt: skip
            along = sorted(
                (r for r in mine if r.attention == name and r.budget in (middle, None)),
                key=lambda r: r.seq_len,
            )
            ax_length.plot([r.seq_len for r in along], [r.error_mean for r in along], label=name, **style)
        ax_budget.set(xlabel="budget (landmarks / features)", title=f"{source}: n = {longest}")
        ax_length.set(xlabel="sequence length", title=f"{source}: budget = {middle} (defaults without one)")
        for ax, ticks in ((ax_budget, budgets), (ax_length, lengths)):
            ax.set(xscale="log", yscale="log", ylabel="relative error")
            ax.set_xticks(list(ticks), [str(t) for t in ticks])
            ax.xaxis.set_minor_formatter(plt.NullFormatter())
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
    save_figure(fig, path)
