"""What the fidelity benchmark measures: one ``FidelityRow`` per core, budget, length and input source,
the mean and std of ‖Â − A‖₂ / ‖A‖₂ over its matrices. Inputs are standard normal Q, K, V per seed, or
the Q, K, V (and mask) that reach each attention core of a trained harness checkpoint on a batch of its
task's validation data, truncated to each length."""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import torch

import attention_zoo
from lra.bench.measuring import run_all
from lra.results.summary_json import SUMMARY_FILE

QKV = tuple[torch.Tensor, torch.Tensor, torch.Tensor]  # each (batch, heads, seq, head_dim)
Trial = tuple[QKV, list[int]]  # inputs and the seeds of the cores' own randomness to run them under
Captured = list[tuple[QKV, torch.Tensor | None]]  # per attention layer: q, k, v and the mask (batch, seq)


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


def relative_spectral_error(approx: torch.Tensor, exact: torch.Tensor) -> torch.Tensor:
    """‖Â − A‖₂ / ‖A‖₂ per matrix: (batch, heads, seq, head_dim) pair -> (batch, heads)."""
    difference = torch.linalg.matrix_norm((approx - exact).double(), ord=2)
    return difference / torch.linalg.matrix_norm(exact.double(), ord=2)


def measured_cores(
    overrides: dict[str, dict[str, object]], head_dim: int, heads: int
) -> tuple[list[str], list[str]]:
    """(approximate cores to measure, notes on those left out: cores with trainable parameters, and one
    line for the mixers, which approximate nothing)."""
    measured, left_out = [], []
    mixers = [f"`{name}`" for name in attention_zoo.available() if attention_zoo.spec(name).mixer]
    if mixers:
        left_out.append(
            f"{', '.join(mixers)}: mixers in place of the whole attention, they approximate nothing"
        )
    for name in [name for name in attention_zoo.available() if attention_zoo.spec(name).approximates]:
        options = overrides.get(name, {})
        core = attention_zoo.build_attention(name, head_dim=head_dim, num_heads=heads, seq_len=64, **options)
        if count := sum(p.numel() for p in core.parameters() if p.requires_grad):
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


def format_progress(row: FidelityRow) -> str:
    budget = f"{row.budget_option or 'defaults'}={row.budget or '-'}"
    return (
        f"[{row.source}] {row.attention:10} vs {row.exact:10} n={row.seq_len:5} {budget}: "
        f"{row.error_mean:.4f} ± {row.error_std:.4f} ({row.samples})"
    )


def measure(
    config: tuple[str, int | None], options: dict[str, object], trials: Sequence[Trial], source: str
) -> FidelityRow:
    """The row of core ``name`` at ``budget`` (config) on ``trials`` of one length, from ``source``."""
    name, budget = config
    entry = attention_zoo.spec(name)
    option = entry.budget_option
    with torch.no_grad():
        errors = errors_on(name, {**options, **({option: budget} if option else {})}, trials)
    std = statistics.stdev(errors.tolist()) if errors.numel() > 1 else 0.0
    seq_len = trials[0][0][0].shape[2]
    return FidelityRow(
        name, entry.approximates, option or "", budget, seq_len, source, errors.mean().item(), std,
        errors.numel(),
    )  # fmt: skip


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
            option = attention_zoo.spec(name).budget_option
            configs = [(name, b) for b in budgets if b <= seq_len] if option else [(name, None)]
            measure_one = partial(measure, options=overrides.get(name, {}), trials=trials, source=source)
            rows += run_all(configs, measure_one, format_progress)
    return rows


def run_config(checkpoint: Path) -> dict:
    """The resolved config of the run that wrote ``checkpoint``, from the run folder's summary.json."""
    for folder in (checkpoint.parent, checkpoint.parent.parent):
        if (folder / SUMMARY_FILE).is_file():
            return json.loads((folder / SUMMARY_FILE).read_text())["config"]
    raise FileNotFoundError(
        f"no summary.json beside {checkpoint} or in its run folder: --checkpoint takes the "
        "<run folder>/checkpoints/best.ckpt that `python -m lra` writes (its config comes from summary.json)"
    )


def checkpoint_core_inputs(checkpoint: Path, data_root: Path | None, count: int) -> Captured:
    """Q, K, V and mask reaching every attention core of a trained harness model, in call order, on
    ``count`` validation inputs."""
    from omegaconf import OmegaConf

    from lra.job.resolve import data_record, model_record, optim_record
    from lra.job.train import build_datamodule, build_model, build_module

    if not checkpoint.is_file():
        raise FileNotFoundError(f"checkpoint {checkpoint} not found; train with `python -m lra ...` first")
    cfg = OmegaConf.create(run_config(checkpoint))
    overrides = {"task.batch_size": count, "num_workers": 0, "model.compile": False}
    if data_root is not None:
        overrides["data_root"] = str(data_root)
    for key, value in overrides.items():
        OmegaConf.update(cfg, key, value)
    module = build_module(optim_record(cfg, cfg.trainer.max_steps), build_model(model_record(cfg)))
    module.load_state_dict(torch.load(checkpoint, map_location="cpu", weights_only=True)["state_dict"])
    datamodule = build_datamodule(data_record(cfg, cfg.task.batch_size))
    datamodule.setup("validate")
    tokens, lengths, _ = next(iter(datamodule.val_dataloader()))
    captured: Captured = []

    def hook(core: torch.nn.Module, args: tuple) -> None:
        q, k, v, *rest = args
        captured.append(((q.detach(), k.detach(), v.detach()), rest[0] if rest else None))

    layers = [
        layer for layer in module.model.modules() if isinstance(layer, attention_zoo.MultiHeadSelfAttention)
    ]
    if not layers:
        raise ValueError(
            "the model has no attention_zoo.MultiHeadSelfAttention layer to capture Q, K, V from"
        )
    handles = [layer.core.register_forward_pre_hook(hook) for layer in layers]
    with torch.no_grad():
        module.model.eval()(tokens, lengths)
    for handle in handles:
        handle.remove()
    return captured


def checkpoint_trials(captured: Captured, seq_len: int, seeds: Sequence[int]) -> list[Trial]:
    """Per captured layer, the first ``seq_len`` positions of its sequences with at least that many real
    tokens, (eligible, heads, seq_len, head_dim) each, under every seed; a layer without one is dropped."""
    trials = []
    for (q, k, v), mask in captured:
        lengths = mask.sum(-1) if mask is not None else torch.full((q.shape[0],), q.shape[2])
        keep = lengths >= seq_len
        if keep.any():
            trials.append((tuple(t[keep, :, :seq_len].float() for t in (q, k, v)), list(seeds)))
    return trials
