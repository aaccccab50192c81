"""``python -m lra.bench fidelity``: how close each approximate attention's output is to its exact
counterpart's (Skyformer, Figure 1), against its budget and the length (``lra.bench.fidelity_measure``
measures it and says which cores are left out). Cores keep their defaults but for ``--set``. Writes
``fidelity_cpu.{csv,md,png}``; the page has a table per input source (random, ``--checkpoint``)."""

from __future__ import annotations

import argparse
import ast
import math
from collections.abc import Sequence
from dataclasses import dataclass, fields
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import torch

import attention_zoo
from lra.bench import fidelity_measure
from lra.bench.fidelity_measure import FidelityRow
from lra.bench.options import option, settings_of
from lra.bench.output import Outputs, log_log, out_option, panel_grid
from lra.provenance import markdown_table
from lra.results.plotting import attention_color, legend_below, legend_entries

if TYPE_CHECKING:
    from matplotlib.figure import Figure

HELP = "relative spectral-norm error of approximate attentions against exact ones"
# the Nyström convolution skip is a learned term beside the approximation, not part of it
DEFAULT_OVERRIDES = ("nystrom.conv_kernel_size=None",)
SET_HELP = f"core option override (repeatable; replaces the default {list(DEFAULT_OVERRIDES)})"
FORMATS = {"budget": "d", "error_mean": ".6g", "error_std": ".6g"}  # the others as they are
CSV_COLUMNS = {field.name: FORMATS.get(field.name, "") for field in fields(FidelityRow)}


@dataclass(frozen=True)
class Settings:
    """A run; the core options as given (``overrides``) and parsed (``options``: name -> option -> value)."""

    lengths: tuple[int, ...] = option(nargs="+", type=int, default=[256, 512, 1024, 2048, 4096])
    budgets: tuple[int, ...] = option(nargs="+", type=int, default=[16, 32, 64, 128, 256])
    seeds: tuple[int, ...] = option(nargs="+", type=int, default=[0, 1, 2])
    batch: int = option(type=int, default=1, help="random inputs per seed")
    heads: int = option(type=int, default=2)
    head_dim: int = option(type=int, default=32)
    overrides: tuple[str, ...] = option("--set", action="append", metavar="NAME.OPTION=VALUE", help=SET_HELP)
    options: dict[str, dict[str, object]]
    checkpoint: Path | None = option(type=Path, help="a Lightning checkpoint of the harness")
    data_root: Path | None = option(type=Path, help="prepared data root for --checkpoint")
    checkpoint_batch: int = option(type=int, default=8, help="validation examples for --checkpoint")
    out: Path = out_option("fidelity_cpu.*")


def settings_from(args: argparse.Namespace) -> Settings:
    overrides = args.overrides or DEFAULT_OVERRIDES
    sort = {"lengths": sorted(args.lengths), "budgets": sorted(args.budgets)}
    return settings_of(Settings, args, overrides=overrides, options=parse_overrides(overrides), **sort)


def parse_overrides(assignments: Sequence[str]) -> dict[str, dict[str, object]]:
    """``["nystrom.conv_kernel_size=None", ...]`` -> ``{"nystrom": {"conv_kernel_size": None}}``."""
    overrides: dict[str, dict[str, object]] = {}
    for assignment in assignments:
        target, sep, text = assignment.partition("=")
        name, dot, option = target.partition(".")
        if not (sep and dot) or option not in attention_zoo.spec(name).options:
            valid = ", ".join(attention_zoo.spec(name).options) if name in attention_zoo.available() else "?"
            raise ValueError(
                f"--set expects NAME.OPTION=VALUE with an option of NAME ({valid}), got {assignment!r}"
            )
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            raise ValueError(f"--set {assignment!r}: the value must be a Python literal") from None
        overrides.setdefault(name, {})[option] = value
    return overrides


def run(settings: Settings, argv: Sequence[str]) -> None:
    outputs = Outputs.start(settings.out, "fidelity", torch.device("cpu"), argv)
    names, left_out = fidelity_measure.measured_cores(settings.options, settings.head_dim, settings.heads)
    sweep = partial(fidelity_measure.sweep, names, settings.options, settings.lengths, settings.budgets)
    shape = (settings.batch, settings.heads, settings.head_dim)
    rows = sweep(lambda n: fidelity_measure.random_trials(n, *shape, settings.seeds), "random")
    if settings.checkpoint is not None:
        captured = fidelity_measure.checkpoint_core_inputs(
            settings.checkpoint, settings.data_root, settings.checkpoint_batch
        )
        rows += sweep(lambda n: fidelity_measure.checkpoint_trials(captured, n, settings.seeds), "checkpoint")
    outputs.write_csv(CSV_COLUMNS, rows)
    outputs.write_page(*page(rows, settings, left_out))
    seeds = ",".join(map(str, settings.seeds))
    where = f"cpu, {settings.heads} heads of dim {settings.head_dim}, batch {settings.batch}, seeds {seeds}"
    outputs.write_figure(fidelity_figure(rows, settings.lengths, settings.budgets, where))
    outputs.announce("csv,md,png")


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


def page(
    rows: Sequence[FidelityRow], settings: Settings, left_out: Sequence[str]
) -> tuple[str, list[str], list[str], list[str]]:
    """The page's title, paragraph, sections (the cores left out, one table per input source) and notes."""
    paragraph = (
        "Relative spectral-norm error ‖Â − A‖₂ / ‖A‖₂ of each approximate core's output Â against its exact "
        f"counterpart's A, per (batch, head) matrix of shape (seq_len, {settings.head_dim}), "
        f"{settings.heads} heads, mean ± std over inputs × batch × heads × seeds {list(settings.seeds)}. "
        f"Random inputs: standard normal Q, K, V, batch {settings.batch}, one draw per seed. Options other "
        f"than the budget: paper defaults, with overrides {list(settings.overrides)}."
    )
    checkpoint = f"`{settings.checkpoint}` (Q, K, V of every attention layer on a validation batch)"
    notes = [f"- checkpoint: {checkpoint}"] if settings.checkpoint else []
    sections = ["\n".join(["Left out:", *(f"- {note}" for note in left_out)])] if left_out else []
    for source in dict.fromkeys(row.source for row in rows):
        table = source_tables([r for r in rows if r.source == source], settings.lengths)
        sections.append(f"## {source} inputs\n\n{table}")
    return "Fidelity on cpu", [paragraph], sections, notes


def fidelity_figure(
    rows: Sequence[FidelityRow], lengths: Sequence[int], budgets: Sequence[int], where: str
) -> Figure:
    """Log–log, a row of panels per input source: error (mean ± std) against budget at the longest length,
    error against length at the middle budget (a core without a budget: dashed, its defaults)."""
    rows = [r for r in rows if math.isfinite(r.error_mean) and r.error_mean > 0]  # log axes
    sources = list(dict.fromkeys(row.source for row in rows))
    labels = {
        name: f"{name} vs {exact}" + (" (no budget: defaults)" if budget is None else "")
        for name, exact, budget in ((r.attention, r.exact, r.budget) for r in rows)
    }
    title = f"Relative spectral-norm error of approximate attention outputs ({where})"
    fig, axes = panel_grid(max(len(sources), 1), title)
    middle = sorted(budgets)[len(budgets) // 2]
    for source, (ax_budget, ax_length) in zip(sources, axes, strict=False):
        mine = [r for r in rows if r.source == source]
        longest = max(r.seq_len for r in mine)
        for name, label in labels.items():
            color = attention_color(name)
            own = [r for r in mine if r.attention == name]
            at_longest = sorted((r for r in own if r.seq_len == longest), key=lambda r: r.budget or 0)
            if at_longest and at_longest[0].budget is None:  # no budget option: a level line
                ax_budget.axhline(at_longest[0].error_mean, color=color, linestyle="--", label=label)
            elif at_longest:
                ax_budget.errorbar(
                    [r.budget for r in at_longest], [r.error_mean for r in at_longest],
                    yerr=[r.error_std for r in at_longest], capsize=3, label=label, color=color, marker="o",
                    markersize=4,
                )  # fmt: skip
            along = sorted((r for r in own if r.budget in (middle, None)), key=lambda r: r.seq_len)
            ax_length.plot(
                [r.seq_len for r in along], [r.error_mean for r in along], label=label, color=color,
                marker="o", markersize=4, linestyle="--" if along and along[0].budget is None else "-",
            )  # fmt: skip
        ax_budget.set(xlabel="budget (landmarks / random features)", title=f"{source} inputs, n = {longest}")
        ax_length.set(xlabel="sequence length", title=f"{source} inputs, budget = {middle}")
        for ax, ticks in ((ax_budget, budgets), (ax_length, lengths)):
            ax.set(ylabel="relative error ‖Â − A‖₂ / ‖A‖₂")
            log_log(ax, ticks)
    legend_below(fig, legend_entries(list(axes.flat)), max_columns=4)
    return fig
