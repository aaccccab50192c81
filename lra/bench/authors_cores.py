"""The authors' attention implementations, each paired with our core under the same settings (the
Skyformer code's LRA configs) for ``python -m lra.bench compare --against authors``: their classes from a
user's checkout (q, k, v: (B, H, N, D) and a float mask (B, N), 1 at real tokens), and ``transformers``'
``LongformerSelfAttention`` as a layer: x (B, N, H·D) -> (B, N, H·D)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

import torch
from torch import nn

import attention_zoo
from lra.one_line import one_line
from lra.provenance import checkout_line, versions_line

Shape = tuple[int, int, int, int]  # (B, H, N, D)
Inputs = tuple[torch.Tensor, ...]
Function = Callable[..., torch.Tensor]  # of the inputs -> the output to differentiate


@dataclass(frozen=True)
class Pair:
    """Our implementation and a reference, both functions of the same ``make_inputs()``; ``weights``: the
    tensors the two hold for the whole run (parameters, buffers), not counted in what backward keeps."""

    label: str
    ours: Function
    reference: Function
    make_inputs: Callable[[], Inputs]
    weights: tuple[torch.Tensor, ...] = ()


SKYFORMER_CONFIG = {
    "nb_features": 128, "sketched_kernel": "kernel_RS_RBF", "accumulation": 1, "sampling_factor": 4,
    "no_projection": False, "device": "cpu",
}  # fmt: skip
BIGBIRD_BLOCKS = {"num_random_blocks": 3, "block_size": 64}
# our core -> their class models.attention_<core>.<class>, its config (beside head_dim, num_head,
# max_seq_len) and our core's options
AUTHORS: dict[str, tuple[str, dict[str, Any], dict[str, Any]]] = {
    "nystrom": ("NystromAttention", {"num_landmarks": 128}, {"num_landmarks": 128, "conv_kernel_size": None}),
    "skyformer": ("Skyformer", SKYFORMER_CONFIG, {"num_landmarks": 128}),
    "performer": ("PerformerAttention", {"rp_dim": 128, "kernel_type": "exp"},
                  {"num_features": 128, "temperature": "d", "feature_epsilon": 1e-4}),
    "bigbird": ("BigBirdAttention", BIGBIRD_BLOCKS, BIGBIRD_BLOCKS),
    "informer": ("ProbAttention", {"in_nb_features": 128},
                 {attention_zoo.spec("informer").budget_option: 128}),
}  # fmt: skip
LONGFORMER_WINDOW = 257  # 128 tokens on each side: Nyströmformer Table 1's Longformer-257


def random_inputs(shape: Shape, seed: int = 0) -> tuple[torch.Tensor, ...]:
    """q, k, v of ``shape`` (B, H, N, D) and an all-True (B, N) mask. q, k, v are views of one
    (B, N, 3, H, D) tensor that requires gradients, laid out as ``MultiHeadSelfAttention``'s fused
    projection hands them to a core."""
    batch, heads, length, head_dim = shape
    generator = torch.Generator().manual_seed(seed)
    qkv = torch.randn(batch, length, 3, heads, head_dim, generator=generator).requires_grad_(True)
    q, k, v = qkv.permute(2, 0, 3, 1, 4)
    return q, k, v, torch.ones(batch, length, dtype=torch.bool)


def with_float_mask(module: nn.Module, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor):
    """Their calling convention: the mask as floats, 1 at real tokens."""
    return module(q, k, v, mask.float())


def import_from(root: Path, module: str) -> ModuleType:
    """``module`` of the checkout ``root``, imported with ``root`` first on the import path."""
    if not (root / f"{module.replace('.', '/')}.py").is_file():
        raise ValueError(f"{root} has no {module}: is it a checkout of the authors' repository?")
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as error:
        raise ValueError(f"{root}'s {module} needs {error.name!r}: pip install {error.name}") from None


def core_pair(source: Path, label: str, shape: Shape) -> Pair:
    batch, heads, length, head_dim = shape
    name, their_config, options = AUTHORS[label]
    config = {"head_dim": head_dim, "num_head": heads, "max_seq_len": length, "attention_dropout": 0.0}
    theirs = getattr(import_from(source, f"models.attention_{label}"), name)(config | their_config).eval()
    ours = attention_zoo.build_attention(label, head_dim=head_dim, num_heads=heads, seq_len=length, **options)
    weights = (*ours.parameters(), *ours.buffers(), *theirs.parameters(), *theirs.buffers())
    return Pair(label, ours.eval(), partial(with_float_mask, theirs), partial(random_inputs, shape), weights)


class TheirLongformerLayer(nn.Module):
    """transformers' ``LongformerSelfAttention`` (no global tokens) and an output projection:
    x (B, N, dim), mask (B, N) bool -> (B, N, dim)."""

    def __init__(self, dim: int, heads: int, window: int) -> None:
        super().__init__()
        from transformers import LongformerConfig
        from transformers.models.longformer.modeling_longformer import LongformerSelfAttention

        config = LongformerConfig(
            hidden_size=dim,
            num_attention_heads=heads,
            attention_window=[window - 1],
            attention_probs_dropout_prob=0.0,
        )
        self.attention = LongformerSelfAttention(config, layer_id=0)
        self.out = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        blocked = torch.finfo(x.dtype).min  # their convention: -10000-like at padding, 0 local, > 0 global
        attention_mask = torch.zeros(mask.shape, dtype=x.dtype).masked_fill(~mask, blocked)
        no_global = torch.zeros_like(mask)
        out = self.attention(
            x, attention_mask, is_index_masked=~mask, is_index_global_attn=no_global, is_global_attn=False
        )[0]
        return self.out(out)


def layer_inputs(shape: Shape) -> tuple[torch.Tensor, torch.Tensor]:
    batch, heads, length, head_dim = shape
    x = torch.randn(batch, length, heads * head_dim, generator=torch.Generator().manual_seed(0))
    return x.requires_grad_(True), torch.ones(batch, length, dtype=torch.bool)


def longformer_pair(shape: Shape) -> Pair:
    batch, heads, length, head_dim = shape
    theirs = TheirLongformerLayer(heads * head_dim, heads, LONGFORMER_WINDOW).eval()
    core = attention_zoo.build_attention(
        "longformer", head_dim=head_dim, num_heads=heads, seq_len=length, window=LONGFORMER_WINDOW
    )
    ours = attention_zoo.MultiHeadSelfAttention(heads * head_dim, heads, core).eval()
    weights = (*ours.parameters(), *ours.buffers(), *theirs.parameters())
    return Pair("longformer (layer)", ours, theirs, partial(layer_inputs, shape), weights)


def authors_provenance(code: Path) -> list[str]:
    """Markdown bullet lines: the checkout's commit (when it is a git checkout) and transformers' version."""
    return [checkout_line("authors' code", code), versions_line("installed", ["transformers"])]


def authors_pairs(code: Path, names: Sequence[str] | None, shape: Shape) -> tuple[list[Pair], list[str]]:
    """Pairs for ``names`` (default: the five of the Skyformer code and longformer), and one line per
    core that is skipped."""
    source = code / "src"
    if not (source / "models").is_dir():
        raise ValueError(
            f"--authors-code: {code} has no src/models/ (expected a checkout of pkuzengqi/Skyformer)"
        )
    pairs, skipped = [], []
    for label in names or [*AUTHORS, "longformer"]:
        if label not in attention_zoo.available():
            skipped.append(f"{label}: not a registered attention here")
            continue
        try:
            pairs.append(longformer_pair(shape) if label == "longformer" else core_pair(source, label, shape))
        except KeyError:
            known = ", ".join([*AUTHORS, "longformer"])
            skipped.append(f"{label}: no authors' implementation known (choose from {known})")
        except Exception as error:  # their import or our options: a line, not a crash
            skipped.append(one_line(f"{label}: {type(error).__name__}: {error}".splitlines()[0], 200))
    return pairs, skipped
