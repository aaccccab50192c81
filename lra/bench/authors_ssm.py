"""``python -m lra.bench authors-ssm``: our mixers against their authors' modules, with the same weights:
state-spaces/s4's ``S4D`` (``models/s4/s4d.py``) and ``S4Block`` around ``FFTConv`` with the diagonal
kernel (``src/models/sequence/``), mamba-minimal's ``MambaBlock``, imported from a user's checkouts and
never copied here. ``METHOD`` and docs/benchmarks.md say how."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import torch
from torch import nn

import attention_zoo
from lra.bench.authors_cores import import_from
from lra.bench.options import option, settings_of
from lra.bench.output import Outputs, out_option
from lra.provenance import checkout_line, git_commit, markdown_table, versions_line

HELP = "our s4d and mamba against their authors' modules, forward and backward, weights copied both ways"
MULTIPLE = 4  # within: |ours − theirs| ≤ MULTIPLE × the reference's own float32 error (METHOD says why)
MOVE = 0.05  # the standard deviation of the step that moves each source weight off its initial value
HEADER = (
    "mixer", "reference", "weights copied", "batch × n × dim", "real lengths", "output: relative difference",
    "reference's own float32 error (output)", "gradients: relative difference",
    "reference's own float32 error (gradients)", f"within {MULTIPLE}× the reference's error",
)  # fmt: skip


@dataclass(frozen=True)
class Settings:
    """A run: the two checkouts, the lengths, the batch and width, the output folder."""

    s4_code: Path = option(type=Path, required=True, help="a checkout of github.com/state-spaces/s4")
    mamba_code: Path = option(
        type=Path, required=True, help="a checkout of github.com/johnma2006/mamba-minimal"
    )
    lengths: tuple[int, ...] = option(type=int, nargs="+", default=[256, 1024], help="default: 256 1024")
    batch: int = option(type=int, default=2)
    dim: int = option(type=int, default=64)
    out: Path = out_option("authors_ssm_cpu.md")


settings_from = partial(settings_of, Settings)


def s4_call(module: nn.Module, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    return module(x, lengths=lengths)[0]  # (y, state); s4d.py's S4D ignores lengths


@dataclass(frozen=True)
class Reference:
    """Our ``attention`` with ``options`` against an authors' module that ``build(settings, dim)`` makes
    from its checkout and ``call(module, x (B, N, dim), lengths (B,))`` runs; ``names``: our parameter ->
    theirs; ``conjugated``: ours whose complex entries (last axis: real, imaginary) are theirs conjugated;
    ``fixed``: theirs that ours hold constant, left at that value; ``padded``: a batch of unequal lengths."""

    attention: str
    options: dict[str, bool]
    reference: str
    build: Callable[[Settings, int], nn.Module]
    names: dict[str, str]
    call: Callable[[nn.Module, torch.Tensor, torch.Tensor], torch.Tensor] = s4_call
    conjugated: tuple[str, ...] = ()
    fixed: tuple[str, ...] = ()
    padded: bool = False


def s4_block(settings: Settings, dim: int, bidirectional: bool) -> nn.Module:
    """Their S4Block around FFTConv, S4D-Lin's diagonal kernel, dt = exp(inv_dt), an SSM per channel."""
    block = import_from(settings.s4_code, "src.models.sequence.modules.s4block").S4Block
    kernel = {"mode": "s4d", "init": "diag-lin", "dt_transform": "exp"}
    return block(dim, transposed=False, bidirectional=bidirectional, **kernel)


def mamba_block(settings: Settings, dim: int) -> nn.Module:
    module = import_from(settings.mamba_code, "model")
    return module.MambaBlock(module.ModelArgs(d_model=dim, n_layer=1, vocab_size=8))


S4D_NAMES = {name: name for name in ("kernel.C", "kernel.log_dt", "kernel.log_A_real", "kernel.A_imag", "D")}
S4D_NAMES |= {f"output_linear.{name}": f"output_linear.0.{name}" for name in ("weight", "bias")}
KERNEL = {"kernel.log_dt": "kernel.inv_dt", "kernel.log_A_real": "kernel.A_real"}  # in S4Block's FFTConv
S4_BLOCK = {  # their A = -exp(A_real) - i·A_imag is ours conjugated, so is C; their B is our constant 1
    "names": {k: v if "output" in k else f"layer.{KERNEL.get(k, v)}" for k, v in S4D_NAMES.items()},
    "conjugated": ("kernel.C",), "fixed": ("layer.kernel.B",), "padded": True,
}  # fmt: skip
MAMBA_NAMES = {name: name for name in ("in_proj.weight", "out_proj.weight")} | {
    f"directions.0.{name}": name for name in
    ("conv1d.weight", "conv1d.bias", "x_proj.weight", "dt_proj.weight", "dt_proj.bias", "A_log", "D")
}  # fmt: skip
ONE_WAY, BOTH_WAYS = {"bidirectional": False}, {"bidirectional": True, "shared_directions": True}
REFERENCES = (
    Reference("s4d", ONE_WAY, "s4d.py S4D", lambda settings, dim: import_from(
        settings.s4_code, "models.s4.s4d").S4D(dim, transposed=False), S4D_NAMES),
    Reference("s4d", ONE_WAY, "S4Block, FFTConv", partial(s4_block, bidirectional=False), **S4_BLOCK),
    Reference("s4d", BOTH_WAYS, "S4Block, FFTConv(bidirectional=True)", partial(s4_block, bidirectional=True),
              **S4_BLOCK),
    Reference("mamba", ONE_WAY, "mamba-minimal MambaBlock", mamba_block, MAMBA_NAMES,
              lambda module, x, lengths: module(x)),
)  # fmt: skip


def conjugate(value: torch.Tensor, flip: bool) -> torch.Tensor:
    """``value`` (..., 2): complex numbers as (real, imaginary), conjugated where ``flip``."""
    return value * value.new_tensor([1.0, -1.0]) if flip else value


def copy_weights(ours: nn.Module, theirs: nn.Module, ref: Reference, from_ours: bool) -> tuple[list, list]:
    """Move each source weight (ours or theirs) off its initial value, then copy it into the other; the
    copied weights of ours and of theirs, in the order of ``ref.names``."""
    mine, yours = dict(ours.named_parameters()), dict(theirs.named_parameters())
    unmapped = (mine.keys() - ref.names.keys()) | (yours.keys() - {*ref.names.values(), *ref.fixed})
    if unmapped:
        raise ValueError(f"{ref.attention} against {ref.reference}: no counterpart for {sorted(unmapped)}")
    generator = torch.Generator().manual_seed(2)
    with torch.no_grad():
        for name, their_name in ref.names.items():
            source, target = (mine[name], yours[their_name]) if from_ours else (yours[their_name], mine[name])
            source.add_(MOVE * torch.randn(source.shape, generator=generator))
            target.copy_(conjugate(source.reshape(target.shape), name in ref.conjugated))
    return [mine[name] for name in ref.names], [yours[name] for name in ref.names.values()]


def gradients(function: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, weights: list[nn.Parameter],
              real: torch.Tensor) -> list[torch.Tensor]:  # fmt: skip
    """The output of ``function(x)`` at the ``real`` (B, N) positions (zero elsewhere), then the gradients
    of a fixed random projection of it for x and each weight."""
    x = x.clone().requires_grad_(True)
    out = function(x) * real[..., None]  # (B, N, dim)
    probe = torch.randn(out.shape, generator=torch.Generator().manual_seed(1)).to(out.dtype)
    return [out, *torch.autograd.grad((out * probe).sum(), [x, *weights])]


def agreement(ref: Reference, settings: Settings, length: int, from_ours: bool) -> tuple[list, bool]:
    """A row of the table (``HEADER``) for one pair and one copy direction, and whether it is within."""
    torch.manual_seed(0)
    theirs = ref.build(settings, settings.dim)
    ours = attention_zoo.build_attention(ref.attention, dim=settings.dim, seq_len=length, **ref.options)
    weights = copy_weights(ours, theirs, ref, from_ours)
    step = length // (2 * settings.batch) if ref.padded else 0
    lengths = length - step * torch.arange(settings.batch)  # (B,)
    real = torch.arange(length) < lengths[:, None]  # (B, N)
    x = torch.randn(settings.batch, length, settings.dim, generator=torch.Generator().manual_seed(0))
    call = partial(ref.call, theirs, lengths=lengths)
    ours32 = gradients(partial(ours, mask=real), x, weights[0], real)
    theirs32 = gradients(call, x, weights[1], real)
    theirs.double()
    theirs64 = gradients(call, x.double(), weights[1], real)
    pairs = zip(theirs32[2:], weights[0], ref.names, strict=True)  # their weights' gradients in our frame
    framed = theirs32[:2] + [conjugate(g.reshape(w.shape), name in ref.conjugated) for g, w, name in pairs]
    output = relative(ours32[0], framed[0]), relative(theirs32[0], theirs64[0])  # ours; the reference's own
    gradient = max(map(relative, ours32[1:], framed[1:])), max(map(relative, theirs32[1:], theirs64[1:]))
    within = output[0] <= MULTIPLE * output[1] and gradient[0] <= MULTIPLE * gradient[1]
    options = ", ".join(f"{name}={str(value).lower()}" for name, value in ref.options.items())
    row = [f"{ref.attention} ({options})", ref.reference, "ours → theirs" if from_ours else "theirs → ours",
           f"{settings.batch} × {length} × {settings.dim}", str(lengths.tolist())[1:-1]]  # fmt: skip
    return [*row, *(f"{d:.2e}" for d in (*output, *gradient)), "yes" if within else "**no**"], within


def relative(ours: torch.Tensor, theirs: torch.Tensor) -> float:
    """max |ours - theirs| / max |theirs|, in float64."""
    return ((ours.double() - theirs.double()).abs().max() / theirs.double().abs().max()).item()


METHOD = (
    "Float32, forward and backward on one random input, at the reference's sizes (S4D: d_state 64; Mamba: "
    "d_state 16, expand 2, d_conv 4), with each pair's weights copied both ways, every copied weight first "
    f"moved off its initial value by a normal step of standard deviation {MOVE:g}; S4Block on a padded "
    "batch, compared at real positions (docs/benchmarks.md says how). A difference is a tensor's largest "
    "absolute difference over the reference tensor's largest entry; gradients: the largest over the input "
    "and every weight. The reference's own float32 error is it against itself in float64. Within: at most "
    f"{MULTIPLE}× that error in the output and in the gradients: as |ours − theirs| ≤ |ours − exact| + "
    f"|theirs − exact|, a float32 code up to {MULTIPLE - 1}× less accurate than the reference passes."
)


def run(settings: Settings, argv: Sequence[str]) -> None:
    outputs = Outputs.start(settings.out, "authors_ssm", torch.device("cpu"), argv)
    notes = [
        checkout_line("s4 checkout", settings.s4_code),
        checkout_line("mamba-minimal checkout", settings.mamba_code),
        f"- this harness at commit {git_commit() or 'unknown (not a git checkout)'}",
        versions_line(
            "their imports (`pip install einops scipy rich`), not ours", ["einops", "scipy", "rich"]
        ),
    ]
    rows, within = zip(*[
        agreement(ref, settings, length, from_ours)
        for length in settings.lengths for ref in REFERENCES for from_ours in (True, False)
    ], strict=True)  # fmt: skip
    table = markdown_table(HEADER, rows)
    print(table)
    outputs.write_page("Our SSM mixers against their authors' code", [METHOD], [table], notes)
    outputs.announce("md")
    if not all(within):
        raise SystemExit(f"a mixer differs from its reference by more than {MULTIPLE}× its float32 error")
