"""One configuration of the efficiency benchmark (``BenchConfig``): its core (the registry's, or
``naive``, the papers' Transformer: ``standard`` may run a fused kernel that never holds the scores), the
step of its workload (``WORKLOADS``), its ``Measurement`` row, and the sweep over lengths that skips what
cannot finish. A step is built after one at ``PRIME_SEQ_LEN`` tokens, so that one-time costs (kernel code
paged in, thread pools, allocator arenas) are paid before the memory probe starts."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial

import torch
import torch.nn.functional as F
from torch import nn

import attention_zoo
from attention_zoo.parts.masking import check_inputs, key_padding_bias
from lra.bench.measuring import Failure, Outcome, Step, measure_step, run_all

NAIVE = "naive"
ENCODER_VOCAB, ENCODER_CLASSES = 257, 10  # byte tokens + pad, as the Text task
PRIME_SEQ_LEN = 64
MEASUREMENT_FAILURES = ("oom", "timeout", "error")  # statuses after which longer lengths are skipped


class NaiveSoftmaxAttention(nn.Module):
    """softmax(QKᵀ/√d + key-padding bias) V, the scores held as a (B, H, N, N) tensor:
    q, k, v (B, H, N, D), mask (B, N) bool or None -> (B, H, N, D)."""

    def __init__(self, *, head_dim: int, num_heads: int, seq_len: int) -> None:
        super().__init__()
        self.scale = 1.0 / math.sqrt(head_dim)

    def forward(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        check_inputs(q, k, v, mask)
        scores = torch.matmul(q, k.transpose(-2, -1)) * self.scale  # (B, H, N, N)
        bias = key_padding_bias(mask, scores.dtype)
        if bias is not None:
            scores = scores + bias
        return torch.matmul(scores.softmax(dim=-1), v)


BENCH_CORES: dict[str, type[nn.Module]] = {NAIVE: NaiveSoftmaxAttention}


def bench_names() -> list[str]:
    """Every name the benchmarks accept: the registry's cores, then the bench-local baselines."""
    return [*attention_zoo.available(), *BENCH_CORES]


def build_core(
    name: str, head_dim: int, num_heads: int, seq_len: int, dim: int | None = None, **options
) -> nn.Module:
    """A registry core or mixer, or a bench-local baseline: ``core(q, k, v, mask) -> out`` (B, H, N, D),
    or a mixer of width ``dim`` (default ``head_dim * num_heads``)."""
    if name in BENCH_CORES:
        if options:
            raise ValueError(f"benchmark baseline {name!r} takes no options, got {sorted(options)}")
        return BENCH_CORES[name](head_dim=head_dim, num_heads=num_heads, seq_len=seq_len)
    return attention_zoo.build_attention(
        name, head_dim=head_dim, num_heads=num_heads, seq_len=seq_len, dim=dim, **options
    )


@dataclass(frozen=True)
class BenchConfig:
    """One measured configuration: ``attention`` built with ``options`` (its defaults for the others);
    ``label`` names the row where one attention appears with several options."""

    attention: str
    seq_len: int
    batch: int = 1
    scope: str = "layer"
    dim: int = 64
    heads: int = 2
    warmup: int = 1
    repeats: int = 5
    device: str = "cpu"
    time_budget_s: float | None = None
    options: dict[str, object] = field(default_factory=dict)
    label: str = ""

    @property
    def name(self) -> str:
        return self.label or self.attention


@dataclass(frozen=True)
class Measurement:
    """One row of results; ``detail`` (not in the CSV) says why a row is not ``ok``."""

    attention: str
    seq_len: int
    batch: int
    time_ms: float | None
    peak_mem_mb: float | None
    status: str
    scope: str = "layer"
    detail: str = ""
    timed_steps: int = 0
    label: str = ""  # the row's name where one attention is measured with several options

    name = BenchConfig.name  # the label, else the attention

    @classmethod
    def of(cls, config: BenchConfig, timed: Outcome) -> Measurement:
        """The row of ``config``: the figures of its timed steps, or the status of its failure."""
        return cls(
            config.attention, config.seq_len, config.batch, timed.median_ms, timed.peak_mb, timed.status,
            config.scope, timed.detail, timed.timed_steps, config.label,
        )  # fmt: skip


def build_layer(config: BenchConfig, device: torch.device) -> nn.Module:
    """The layer that mixes the tokens: (batch, n, dim) -> (batch, n, dim), a core in its
    ``MultiHeadSelfAttention`` or a mixer as it is."""
    heads, dim = config.heads, config.dim
    core = build_core(config.attention, dim // heads, heads, config.seq_len, dim, **config.options)
    layer = core if attention_zoo.is_mixer(core) else attention_zoo.MultiHeadSelfAttention(dim, heads, core)
    return layer.to(device)


def layer_step(config: BenchConfig, device: torch.device) -> Step:
    """x (batch, n, dim) -> MultiHeadSelfAttention -> sum -> backward."""
    layer = build_layer(config, device)
    x = torch.randn(config.batch, config.seq_len, config.dim, device=device, requires_grad=True)

    def step() -> None:
        layer.zero_grad(set_to_none=True)
        x.grad = None
        layer(x).sum().backward()

    return step


def encoder_step(config: BenchConfig, device: torch.device) -> Step:
    """tokens (batch, n) -> LRAClassifier -> cross-entropy -> backward."""
    from lra.model.encoder import LRAClassifier

    core = partial(build_core, config.attention, **config.options)
    model = LRAClassifier(
        vocab_size=ENCODER_VOCAB, num_classes=ENCODER_CLASSES, seq_len=config.seq_len, attention=core,
        dim=config.dim, num_heads=config.heads,
    ).to(device)  # fmt: skip
    tokens = torch.randint(1, ENCODER_VOCAB, (config.batch, config.seq_len), device=device)
    lengths = torch.full((config.batch,), config.seq_len, device=device)
    labels = torch.randint(0, ENCODER_CLASSES, (config.batch,), device=device)

    def step() -> None:
        model.zero_grad(set_to_none=True)
        F.cross_entropy(model(tokens, lengths), labels).backward()

    return step


def inference_step(config: BenchConfig, device: torch.device) -> Step:
    """x (batch, n, dim) -> the layer in eval mode -> (batch, n, dim), no autograd."""
    layer = build_layer(config, device).eval()
    x = torch.randn(config.batch, config.seq_len, config.dim, device=device)
    return torch.inference_mode()(partial(layer, x))


WORKLOADS = {"layer": layer_step, "encoder": encoder_step, "inference": inference_step}  # scope -> step


def primed_step(config: BenchConfig, device: torch.device) -> Step:
    """The step of ``config`` (seeded), built after one step of its workload at ``PRIME_SEQ_LEN`` tokens."""
    torch.manual_seed(0)
    build = WORKLOADS[config.scope]
    build(replace(config, seq_len=min(config.seq_len, PRIME_SEQ_LEN)), device)()
    return build(config, device)


def measure(config: BenchConfig) -> Measurement:
    """Run ``config`` in this process: warm-up, then the median of up to ``repeats`` timed steps; a row
    of a published table whose attention is not registered says so."""
    if config.attention not in bench_names():
        return Measurement.of(config, Failure("not registered", f"no attention {config.attention!r} here"))
    device = torch.device(config.device)
    build = partial(primed_step, config, device)
    timed = measure_step(build, device, config.warmup, config.repeats, config.time_budget_s)
    return Measurement.of(config, timed)


def format_progress(row: Measurement) -> str:
    figures = (
        f"{row.time_ms:10.1f} ms {row.peak_mem_mb:10.1f} MB ({row.timed_steps} timed)"
        if row.status == "ok"
        else f"{row.status.upper()} {row.detail}"
    )
    return f"[{row.scope:7}] {row.name:10} n={row.seq_len:6} batch={row.batch}: {figures}"


def sweep(
    configs: Sequence[BenchConfig],
    run_one: Callable[[BenchConfig], Measurement],
    max_step_s: float | None = None,
) -> list[Measurement]:
    """``run_one`` of every config in order (lengths ascending), printing each row; after a failure or a
    step over ``max_step_s`` the longer configurations of that attention (or label) and scope are
    ``skipped`` rows that say why."""
    stopped: dict[tuple[str, str], str] = {}

    def run_unless_stopped(config: BenchConfig) -> Measurement:
        key = (config.scope, config.name)
        if key in stopped:
            return Measurement.of(config, Failure("skipped", stopped[key]))
        row = run_one(config)
        if row.status in MEASUREMENT_FAILURES:
            stopped[key] = f"{row.status} at seq_len {row.seq_len}"
        elif max_step_s is not None and row.time_ms is not None and row.time_ms > 1000 * max_step_s:
            took = f"a step took {row.time_ms / 1000:.1f} s at seq_len {row.seq_len}"
            stopped[key] = f"{took} (over --max-step-s {max_step_s:g})"
        return row

    return run_all(configs, run_unless_stopped, format_progress)
