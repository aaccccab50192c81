"""``python -m lra.bench authors-ssm``: our mixers against their authors' forward, with the same weights.

``s4d`` (one-directional) against ``S4D`` of state-spaces/s4's ``models/s4/s4d.py``, and ``mamba``
(one-directional) against ``MambaBlock`` of johnma2006/mamba-minimal's ``model.py``, each imported
from a user's checkout (none of their code is in this repository; their modules need ``einops``). Our
mixer is built with its defaults and the reference's sizes, the reference's weights are copied into
it, and both run forward and backward on the same input: the page gives the largest difference of
the outputs and of the gradients of the input and of every weight, relative to the reference
tensor's largest entry (a weight's gradient sums over every position), in float32.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import torch
from torch import nn

import attention_zoo
from lra.bench.output import Outputs
from lra.provenance import markdown_table

HELP = "our s4d and mamba against the authors' forward and backward, with the same weights"
TOLERANCE = 1e-5
HEADER = (
    "mixer", "reference", "batch × n × dim", "output: relative difference", "gradients: relative difference",
    f"within {TOLERANCE:g}", "reference's own float32 error (gradients)",
)  # fmt: skip


@dataclass(frozen=True)
class SsmSettings:
    """A run: the two checkouts, the lengths, the batch and width, the output folder."""

    s4_code: Path
    mamba_code: Path
    lengths: tuple[int, ...]
    batch: int
    dim: int
    out: Path


@dataclass(frozen=True)
class Agreement:
    """One mixer at one length: the largest differences from the reference, relative to its largest entry."""

    mixer: str
    reference: str
    shape: tuple[int, int, int]
    output_diff: float
    gradient_diff: float
    reference_float32_error: float  # the reference's float32 gradients against its own float64 ones

    @property
    def agrees(self) -> bool:
        return max(self.output_diff, self.gradient_diff) <= TOLERANCE


def load_module(path: Path, name: str, root: Path) -> ModuleType:
    """Import the file ``path`` as module ``name``, with ``root`` on the import path (their imports)."""
    if not path.is_file():
        raise ValueError(f"{path} does not exist: is {root} a checkout of the authors' repository?")
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    spec = importlib.util.spec_from_file_location(name, path)
    module = sys.modules[name] = importlib.util.module_from_spec(spec)  # dataclasses look it up there
    try:
        spec.loader.exec_module(module)
    except ModuleNotFoundError as error:
        raise ValueError(f"{path} needs {error.name!r}: pip install {error.name}") from None
    return module


def copy_weights(source: dict[str, torch.Tensor], target: nn.Module, names: dict[str, str]) -> None:
    """``target``'s parameter ``ours`` := ``source[theirs]`` for each pair of ``names``."""
    parameters = dict(target.named_parameters())
    with torch.no_grad():
        for ours, theirs in names.items():
            parameters[ours].copy_(source[theirs])


S4D_NAMES = {
    "kernel.C": "kernel.C", "kernel.log_dt": "kernel.log_dt", "kernel.log_A_real": "kernel.log_A_real",
    "kernel.A_imag": "kernel.A_imag", "D": "D", "output_linear.weight": "output_linear.0.weight",
    "output_linear.bias": "output_linear.0.bias",
}  # fmt: skip
MAMBA_NAMES = {
    "in_proj.weight": "in_proj.weight", "directions.0.conv1d.weight": "conv1d.weight",
    "directions.0.conv1d.bias": "conv1d.bias", "directions.0.x_proj.weight": "x_proj.weight",
    "directions.0.dt_proj.weight": "dt_proj.weight", "directions.0.dt_proj.bias": "dt_proj.bias",
    "directions.0.A_log": "A_log", "directions.0.D": "D", "out_proj.weight": "out_proj.weight",
}  # fmt: skip


@dataclass(frozen=True)
class Pair:
    """Our mixer, the reference module and how to call it (x (B, N, dim) -> (B, N, dim)); ``names``:
    our parameter -> theirs."""

    ours: nn.Module
    theirs: nn.Module
    call: Callable[[torch.Tensor], torch.Tensor]
    names: dict[str, str]


def s4d_pair(code: Path, dim: int, length: int) -> Pair:
    theirs = load_module(code / "models/s4/s4d.py", "authors_s4d", code).S4D(dim, transposed=False)
    ours = attention_zoo.build_attention("s4d", dim=dim, seq_len=length, bidirectional=False)
    copy_weights(theirs.state_dict(), ours, S4D_NAMES)
    return Pair(ours, theirs, lambda x: theirs(x)[0], S4D_NAMES)  # theirs returns (y, state)


def mamba_pair(code: Path, dim: int, length: int) -> Pair:
    module = load_module(code / "model.py", "authors_mamba_minimal", code)
    theirs = module.MambaBlock(module.ModelArgs(d_model=dim, n_layer=1, vocab_size=8))
    ours = attention_zoo.build_attention("mamba", dim=dim, seq_len=length, bidirectional=False)
    copy_weights(theirs.state_dict(), ours, MAMBA_NAMES)
    return Pair(ours, theirs, theirs, MAMBA_NAMES)


def gradients(function: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, weights: list[torch.Tensor]):
    """The output of ``function(x)`` and the gradients of a fixed random projection of it."""
    x = x.clone().requires_grad_(True)
    out = function(x)
    probe = torch.randn(out.shape, generator=torch.Generator().manual_seed(1))
    return out, torch.autograd.grad((out * probe).sum(), [x, *weights])


def agreement(label: str, reference: str, pair: Pair, shape: tuple[int, int, int]) -> Agreement:
    x = torch.randn(shape, generator=torch.Generator().manual_seed(0))  # (B, N, dim)
    ours, theirs = dict(pair.ours.named_parameters()), dict(pair.theirs.named_parameters())
    out_ours, grads_ours = gradients(pair.ours, x, [ours[name] for name in pair.names])
    out_theirs, grads_theirs = gradients(pair.call, x, [theirs[name] for name in pair.names.values()])
    gradient_diff = max(relative(a, b) for a, b in zip(grads_ours, grads_theirs, strict=True))
    pair.theirs.double()
    _, grads_exact = gradients(pair.call, x.double(), [theirs[name] for name in pair.names.values()])
    floor = max(relative(a.double(), b) for a, b in zip(grads_theirs, grads_exact, strict=True))
    return Agreement(label, reference, shape, relative(out_ours, out_theirs), gradient_diff, floor)


def relative(ours: torch.Tensor, theirs: torch.Tensor) -> float:
    """max |ours - theirs| / max |theirs|."""
    return ((ours - theirs).abs().max() / theirs.abs().max()).item()


def configure(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("--s4-code", type=Path, required=True, help="a checkout of github.com/state-spaces/s4")
    add("--mamba-code", type=Path, required=True, help="a checkout of github.com/johnma2006/mamba-minimal")
    add("--lengths", type=int, nargs="+", default=[256, 1024], help="default: 256 1024")
    add("--batch", type=int, default=2)
    add("--dim", type=int, default=64)
    add("--out", type=Path, default=Path("results"), help="folder for authors_ssm_cpu.md")


def settings_from(args: argparse.Namespace) -> SsmSettings:
    return SsmSettings(args.s4_code, args.mamba_code, tuple(args.lengths), args.batch, args.dim, args.out)


def commit_of(code: Path) -> str:
    found = subprocess.run(["git", "-C", str(code), "rev-parse", "HEAD"], capture_output=True, text=True)
    return found.stdout.strip() or "unknown (not a git checkout)"


def run(settings: SsmSettings, argv: Sequence[str]) -> None:
    outputs = Outputs.start(settings.out, "authors_ssm", torch.device("cpu"), ["authors-ssm", *argv])
    results = []
    for length in settings.lengths:
        shape = (settings.batch, length, settings.dim)
        torch.manual_seed(0)
        s4d = s4d_pair(settings.s4_code, settings.dim, length)
        results.append(agreement("s4d (bidirectional=false)", "s4d.py S4D", s4d, shape))
        mamba = mamba_pair(settings.mamba_code, settings.dim, length)
        results.append(agreement("mamba (bidirectional=false)", "mamba-minimal MambaBlock", mamba, shape))
    rows = [
        [r.mixer, r.reference, " × ".join(map(str, r.shape)), f"{r.output_diff:.2e}",
         f"{r.gradient_diff:.2e}", "yes" if r.agrees else "**no**", f"{r.reference_float32_error:.2e}"]
        for r in results
    ]  # fmt: skip
    print(markdown_table(HEADER, rows))
    method = (
        "Each mixer with its defaults at the reference's sizes (S4D: d_state 64; Mamba: d_state 16, "
        "expand 2, d_conv 4, dt_rank ceil(dim/16)), one-directional, the reference's weights copied in; "
        "forward and backward in float32 on one random input without padding. Each difference is the "
        "largest absolute difference of a tensor divided by the reference tensor's largest entry; "
        "gradients: the largest such over the input and every copied weight, of a fixed random "
        "projection of the output. The last column is the reference's own float32 gradients against "
        "the same reference in float64: the rounding floor that any float32 implementation meets. "
        "Weights drawn with seed 0 at each length."
    )
    notes = [
        f"- s4 checkout: {settings.s4_code} at {commit_of(settings.s4_code)}",
        f"- mamba-minimal checkout: {settings.mamba_code} at {commit_of(settings.mamba_code)}",
    ]
    outputs.write_page(
        "Our SSM mixers against their authors' code", [method], [markdown_table(HEADER, rows)], notes
    )
    outputs.announce("md")
    if not all(r.agrees for r in results):
        raise SystemExit(f"a mixer differs from its reference by more than {TOLERANCE:g}")
