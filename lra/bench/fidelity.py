"""``python -m lra.bench fidelity``: how close each approximate attention's output is to its exact
counterpart's (Skyformer, Figure 1).

For every core whose registry entry names the exact attention it ``approximates`` (softmax =
``standard`` for nystrom, performer, reformer; ``kernelized`` for skyformer), the error of one
(batch, head) output matrix is the relative spectral norm

    ‖Â − A‖₂ / ‖A‖₂,   Â = approximate core(q, k, v), A = exact core(q, k, v): (seq_len, head_dim),

reported as mean and standard deviation over every (input, batch, head, seed) matrix, against the
core's budget (its registry ``budget_option``: landmarks, random features) and the sequence length.
A core without a budget option (reformer) is measured once per length at its defaults.

Inputs are standard normal Q, K, V (``random``), or, with ``--checkpoint``, the Q, K, V that reach
the attention cores of a trained model on a batch of its task's validation data (``checkpoint``),
truncated to each length. Cores are built fresh with their default options, except for the
overrides of ``--set`` (by default the Nyström convolution skip is off: it is a learned term added
beside the approximation, not part of it). Cores with trainable parameters after these overrides
(Linformer's projections) are left out: before training their output approximates nothing.

Errors and the sweep: ``lra.bench.fidelity_measure``; checkpoint inputs: ``lra.bench.fidelity_checkpoint``;
tables and plot: ``lra.bench.fidelity_tables``.
"""

from __future__ import annotations

import argparse
import ast
from collections.abc import Callable, Sequence
from pathlib import Path

import torch

import attention_zoo
from lra.bench.fidelity_checkpoint import checkpoint_core_inputs, truncated_inputs
from lra.bench.fidelity_measure import measured_cores, random_trials, sweep
from lra.bench.fidelity_tables import CSV_COLUMNS, page, write_plot
from lra.bench.output import Outputs

HELP = "relative spectral-norm error of approximate attentions against exact ones"
DEFAULT_LENGTHS = (256, 512, 1024, 2048, 4096)
DEFAULT_BUDGETS = (16, 32, 64, 128, 256)
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


def configure(parser: argparse.ArgumentParser) -> Callable[[argparse.Namespace, Sequence[str]], None]:
    """Arguments of ``python -m lra.bench fidelity``."""
    parser.add_argument("--lengths", nargs="+", type=int, default=list(DEFAULT_LENGTHS))
    parser.add_argument("--budgets", nargs="+", type=int, default=list(DEFAULT_BUDGETS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--batch", type=int, default=1, help="random inputs per seed")
    parser.add_argument("--heads", type=int, default=2)
    parser.add_argument("--head-dim", type=int, default=32)
    parser.add_argument(
        "--set",
        action="append",
        metavar="NAME.OPTION=VALUE",
        help=f"core option override (repeatable; replaces the default {list(DEFAULT_OVERRIDES)})",
    )
    parser.add_argument("--checkpoint", type=Path, default=None, help="a Lightning checkpoint of the harness")
    parser.add_argument("--data-root", type=Path, default=None, help="prepared data root for --checkpoint")
    parser.add_argument(
        "--checkpoint-batch", type=int, default=8, help="validation examples for --checkpoint"
    )
    parser.add_argument("--out", type=Path, default=Path("results"))
    return run


def run(args: argparse.Namespace, argv: Sequence[str]) -> None:
    args.lengths, args.budgets = sorted(args.lengths), sorted(args.budgets)
    args.set = args.set or list(DEFAULT_OVERRIDES)
    overrides = parse_overrides(args.set)
    outputs = Outputs.start(args.out, "fidelity", torch.device("cpu"), ["fidelity", *argv])
    names, left_out = measured_cores(overrides, args.head_dim, args.heads)
    sweep_args = (names, overrides, args.lengths, args.budgets)
    rows = sweep(
        *sweep_args,
        lambda n: random_trials(n, args.batch, args.heads, args.head_dim, args.seeds),
        "random",
    )
    if args.checkpoint is not None:
        captured = checkpoint_core_inputs(args.checkpoint, args.data_root, args.checkpoint_batch)
        rows += sweep(
            *sweep_args, lambda n: [(qkv, args.seeds) for qkv in truncated_inputs(captured, n)], "checkpoint"
        )
    outputs.write_csv(CSV_COLUMNS, rows)
    outputs.write_page(*page(rows, args, left_out))
    write_plot(outputs, rows, args)
    outputs.announce("csv,md,png")
