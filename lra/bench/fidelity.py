"""How close each approximate attention's output is to its exact counterpart's (Skyformer, Figure 1).

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
"""

from __future__ import annotations

import argparse
import ast
import csv
import json
import statistics
from collections.abc import Callable, Sequence
from dataclasses import astuple, dataclass, fields
from pathlib import Path

import torch

import attention_zoo
from lra.provenance import machine_description, markdown_table, rerun_command

DEFAULT_LENGTHS = (256, 512, 1024, 2048, 4096)
DEFAULT_BUDGETS = (16, 32, 64, 128, 256)
DEFAULT_OVERRIDES = ("nystrom.conv_kernel_size=None",)

QKV = tuple[torch.Tensor, torch.Tensor, torch.Tensor]  # each (batch, heads, seq, head_dim)
Trial = tuple[QKV, list[int]]  # inputs and the seeds of the cores' own randomness to run them under


@dataclass(frozen=True)
class FidelityRow:
    """One CSV row: the error of ``attention`` at ``budget`` on inputs of ``seq_len`` from ``source``."""

    attention: str
    exact: str
    budget_option: str
    budget: int | None
    seq_len: int
    source: str
    error_mean: float
    error_std: float
    samples: int


CSV_COLUMNS = tuple(field.name for field in fields(FidelityRow))


def relative_spectral_error(approx: torch.Tensor, exact: torch.Tensor) -> torch.Tensor:
    """‖Â − A‖₂ / ‖A‖₂ per matrix: (batch, heads, seq, head_dim) pair -> (batch, heads)."""
    difference = torch.linalg.matrix_norm((approx - exact).double(), ord=2)
    return difference / torch.linalg.matrix_norm(exact.double(), ord=2)


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


def trainable_parameters(name: str, options: dict[str, object], head_dim: int, num_heads: int) -> int:
    core = attention_zoo.build_attention(name, head_dim=head_dim, num_heads=num_heads, seq_len=64, **options)
    return sum(p.numel() for p in core.parameters() if p.requires_grad)


def measured_cores(
    overrides: dict[str, dict[str, object]], head_dim: int, num_heads: int
) -> tuple[list[str], list[str]]:
    """(approximate cores to measure, notes on the approximate cores left out and why)."""
    measured, left_out = [], []
    for name in attention_zoo.available():
        if attention_zoo.spec(name).approximates is None:
            continue
        count = trainable_parameters(name, overrides.get(name, {}), head_dim, num_heads)
        if count:
            left_out.append(
                f"`{name}`: {count} trainable parameters at seq_len 64 (learned, not a fixed approximation)"
            )
        else:
            measured.append(name)
    return measured, left_out


def errors_on(name: str, options: dict[str, object], trials: Sequence[Trial]) -> torch.Tensor:
    """Relative errors of ``name`` against its exact counterpart, flat over trials, seeds, batch, heads."""
    exact_name = attention_zoo.spec(name).approximates
    errors = []
    for (q, k, v), seeds in trials:
        batch, heads, seq, head_dim = q.shape
        exact = attention_zoo.build_attention(exact_name, head_dim=head_dim, num_heads=heads, seq_len=seq)
        reference = exact.eval()(q, k, v, None)
        for seed in seeds:
            torch.manual_seed(seed)  # cores that draw features or landmarks draw them from this seed
            core = attention_zoo.build_attention(
                name, head_dim=head_dim, num_heads=heads, seq_len=seq, **options
            )
            errors.append(relative_spectral_error(core.eval()(q, k, v, None), reference).flatten())
    return torch.cat(errors)


def random_trials(seq_len: int, batch: int, heads: int, head_dim: int, seeds: Sequence[int]) -> list[Trial]:
    """Per seed, standard normal (q, k, v), each (batch, heads, seq_len, head_dim), run under that seed."""
    trials = []
    for seed in seeds:
        generator = torch.Generator().manual_seed(seed)
        q, k, v = (torch.randn(batch, heads, seq_len, head_dim, generator=generator) for _ in range(3))
        trials.append(((q, k, v), [seed]))
    return trials


def sweep(
    names: Sequence[str],
    overrides: dict[str, dict[str, object]],
    lengths: Sequence[int],
    budgets: Sequence[int],
    trials_for: Callable[[int], list[Trial]],
    source: str,
) -> list[FidelityRow]:
    """Every (core, budget <= length, length) on the trials ``trials_for(length)``; prints each row."""
    rows = []
    for seq_len in lengths:
        trials = trials_for(seq_len)
        if not trials:
            print(f"[{source}] n={seq_len}: no input this long, left out", flush=True)
            continue
        for name in names:
            entry = attention_zoo.spec(name)
            option = entry.budget_option
            for budget in [b for b in budgets if b <= seq_len] if option else [None]:
                options = {**overrides.get(name, {}), **({option: budget} if option else {})}
                with torch.no_grad():
                    errors = errors_on(name, options, trials)
                std = statistics.stdev(errors.tolist()) if errors.numel() > 1 else 0.0
                row = FidelityRow(
                    name, entry.approximates, option or "", budget, seq_len, source,
                    errors.mean().item(), std, errors.numel(),
                )  # fmt: skip
                rows.append(row)
                print(
                    f"[{source}] {name:10} vs {row.exact:10} n={seq_len:5} {option or 'defaults'}="
                    f"{budget or '-'}: {row.error_mean:.4f} ± {row.error_std:.4f} ({row.samples})",
                    flush=True,
                )
    return rows


# --- checkpoint inputs ---------------------------------------------------------------------------


def capture_core_inputs(
    model: torch.nn.Module, run_model: Callable[[], object]
) -> list[tuple[QKV, torch.Tensor | None]]:
    """(q, k, v) and mask reaching each attention core of ``model`` during ``run_model()``, in call order."""
    captured: list[tuple[QKV, torch.Tensor | None]] = []

    def hook(module: torch.nn.Module, args: tuple) -> None:
        q, k, v, *rest = args
        captured.append(((q.detach(), k.detach(), v.detach()), rest[0] if rest else None))

    handles = [
        layer.core.register_forward_pre_hook(hook)
        for layer in model.modules()
        if isinstance(layer, attention_zoo.MultiHeadSelfAttention)
    ]
    if not handles:
        raise ValueError(
            "the model has no attention_zoo.MultiHeadSelfAttention layer to capture Q, K, V from"
        )
    try:
        with torch.no_grad():
            run_model()
    finally:
        for handle in handles:
            handle.remove()
    return captured


def run_config(checkpoint: Path) -> dict:
    """The resolved config of the run that wrote ``checkpoint``, from the run folder's summary.json."""
    for folder in (checkpoint.parent, checkpoint.parent.parent):
        if (folder / "summary.json").is_file():
            return json.loads((folder / "summary.json").read_text())["config"]
    raise FileNotFoundError(
        f"no summary.json beside {checkpoint} or in its run folder: --checkpoint takes the "
        "<run folder>/checkpoints/best.ckpt that `python -m lra` writes (its config comes from summary.json)"
    )


def checkpoint_core_inputs(
    checkpoint: Path, data_root: Path | None, count: int
) -> list[tuple[QKV, torch.Tensor | None]]:
    """Q, K, V and mask at every attention core of a trained harness model on ``count`` validation inputs."""
    from omegaconf import OmegaConf

    from lra.train import build_datamodule, build_module

    if not checkpoint.is_file():
        raise FileNotFoundError(f"checkpoint {checkpoint} not found; train with `python -m lra ...` first")
    cfg = OmegaConf.create(run_config(checkpoint))
    overrides = {"task.batch_size": count, "num_workers": 0, "model.compile": False}
    if data_root is not None:
        overrides["data_root"] = str(data_root)
    for key, value in overrides.items():
        OmegaConf.update(cfg, key, value)
    module = build_module(cfg)
    module.load_state_dict(torch.load(checkpoint, map_location="cpu", weights_only=True)["state_dict"])
    datamodule = build_datamodule(cfg)
    datamodule.setup("validate")
    tokens, lengths, _ = next(iter(datamodule.val_dataloader()))
    model = module.model.eval()
    return capture_core_inputs(model, lambda: model(tokens, lengths))


def truncated_inputs(captured: Sequence[tuple[QKV, torch.Tensor | None]], seq_len: int) -> list[QKV]:
    """Per captured layer, the first ``seq_len`` positions of the sequences with at least that many
    real tokens: (eligible, heads, seq_len, head_dim) each; layers without such a sequence are dropped."""
    inputs = []
    for (q, k, v), mask in captured:
        lengths = mask.sum(-1) if mask is not None else torch.full((q.shape[0],), q.shape[2])
        keep = lengths >= seq_len
        if keep.any():
            inputs.append(tuple(t[keep, :, :seq_len].float() for t in (q, k, v)))
    return inputs


# --- outputs -------------------------------------------------------------------------------------


def write_csv(path: Path, rows: Sequence[FidelityRow]) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(CSV_COLUMNS)
        for row in rows:
            values = list(astuple(row))
            values[3] = "" if row.budget is None else row.budget
            values[6], values[7] = f"{row.error_mean:.6g}", f"{row.error_std:.6g}"
            writer.writerow(values)


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
        "with overrides "
        f"{list(args.set or DEFAULT_OVERRIDES)}.",
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
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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
            ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# --- command line --------------------------------------------------------------------------------


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
    device = torch.device("cpu")
    args.lengths, args.budgets = sorted(args.lengths), sorted(args.budgets)
    overrides = parse_overrides(args.set or DEFAULT_OVERRIDES)
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
    args.out.mkdir(parents=True, exist_ok=True)
    write_csv(args.out / f"fidelity_{device.type}.csv", rows)
    command = rerun_command("lra.bench", ["fidelity", *argv])
    write_markdown(args.out / f"fidelity_{device.type}.md", rows, args, left_out, device, command)
    write_plot(args.out / f"fidelity_{device.type}.png", rows, args.lengths, args.budgets)
    print(f"wrote {args.out}/fidelity_{device.type}.{{csv,md,png}}")
