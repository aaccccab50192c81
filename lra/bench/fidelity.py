"""``python -m lra.bench fidelity``: how close each approximate attention's output is to its exact
counterpart's (Skyformer, Figure 1).

For every core whose registry entry names the exact attention it ``approximates``, the error of one
(batch, head) output matrix is ‖Â − A‖₂ / ‖A‖₂ (Â = approximate core(q, k, v), A = exact core(q, k, v),
each (seq_len, head_dim)), as mean and std over every (input, batch, head, seed) matrix, against the
core's budget (its registry ``budget_option``) and the length. Inputs: standard normal Q, K, V, or with
``--checkpoint`` those reaching a trained model's cores. Cores keep their defaults but for ``--set``;
cores with trainable parameters (Linformer's projections) approximate nothing untrained and are left
out. Errors and the sweep: ``lra.bench.fidelity_measure``; page and plot: ``lra.bench.fidelity_tables``.
"""

from __future__ import annotations

import argparse
import ast
from collections.abc import Sequence
from pathlib import Path

import torch

import attention_zoo
from lra.bench.fidelity_checkpoint import checkpoint_core_inputs, truncated_inputs
from lra.bench.fidelity_measure import measured_cores, random_trials, sweep
from lra.bench.fidelity_tables import CSV_COLUMNS, FidelitySettings, fidelity_figure, page, plot_where
from lra.bench.output import Outputs

HELP = "relative spectral-norm error of approximate attentions against exact ones"
DEFAULT_LENGTHS = (256, 512, 1024, 2048, 4096)
DEFAULT_BUDGETS = (16, 32, 64, 128, 256)
# the Nyström convolution skip is a learned term beside the approximation, not part of it
DEFAULT_OVERRIDES = ("nystrom.conv_kernel_size=None",)


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


def configure(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``python -m lra.bench fidelity``."""
    add = parser.add_argument
    add("--lengths", nargs="+", type=int, default=list(DEFAULT_LENGTHS))
    add("--budgets", nargs="+", type=int, default=list(DEFAULT_BUDGETS))
    add("--seeds", nargs="+", type=int, default=[0, 1, 2])
    add("--batch", type=int, default=1, help="random inputs per seed")
    add("--heads", type=int, default=2)
    add("--head-dim", type=int, default=32)
    add(
        "--set",
        action="append",
        metavar="NAME.OPTION=VALUE",
        help=f"core option override (repeatable; replaces the default {list(DEFAULT_OVERRIDES)})",
    )
    add("--checkpoint", type=Path, default=None, help="a Lightning checkpoint of the harness")
    add("--data-root", type=Path, default=None, help="prepared data root for --checkpoint")
    add("--checkpoint-batch", type=int, default=8, help="validation examples for --checkpoint")
    add("--out", type=Path, default=Path("results"))


def settings_from(args: argparse.Namespace) -> FidelitySettings:
    overrides = tuple(args.set or DEFAULT_OVERRIDES)
    return FidelitySettings(
        tuple(sorted(args.lengths)), tuple(sorted(args.budgets)), tuple(args.seeds), args.batch, args.heads,
        args.head_dim, overrides, parse_overrides(overrides), args.checkpoint, args.data_root,
        args.checkpoint_batch, args.out,
    )  # fmt: skip


def run(settings: FidelitySettings, argv: Sequence[str]) -> None:
    outputs = Outputs.start(settings.out, "fidelity", torch.device("cpu"), ["fidelity", *argv])
    names, left_out = measured_cores(settings.options, settings.head_dim, settings.heads)
    measured = (names, settings.options, settings.lengths, settings.budgets)
    shape = (settings.batch, settings.heads, settings.head_dim)
    rows = sweep(*measured, lambda n: random_trials(n, *shape, settings.seeds), "random")
    if settings.checkpoint is not None:
        captured = checkpoint_core_inputs(settings.checkpoint, settings.data_root, settings.checkpoint_batch)
        seeds = list(settings.seeds)
        rows += sweep(
            *measured, lambda n: [(qkv, seeds) for qkv in truncated_inputs(captured, n)], "checkpoint"
        )
    outputs.write_csv(CSV_COLUMNS, rows)
    outputs.write_page(*page(rows, settings, left_out))
    outputs.write_figure(fidelity_figure(rows, settings.lengths, settings.budgets, plot_where(settings)))
    outputs.announce("csv,md,png")
