"""Rotary position embeddings (RoPE; Su et al. 2021, RoFormer): q and k of each head rotated by their
position, so that q_i·k_j depends on the positions only through i − j.

Of each head's ``head_dim`` dimensions the first r = 2·⌊fraction·head_dim/2⌋ are rotated and the rest
pass unchanged, as GPT-NeoX's ``rotary_pct`` (its HuggingFace port: ``rotary_ndims =
int(head_size * rotary_pct)``; GPT-NeoX-20B rotates a quarter). The r rotated dimensions are paired
half-split, dimension j with j + r/2 (GPT-NeoX's and LLaMA's ``rotate_half``), pair j turning by the
angle p·θ_j at position p, θ_j = base^(−2j/r), base 10000 (RoFormer §3.2). RoFormer's paper pairs
neighbours (2j, 2j + 1) instead, and so does Miralles-González et al.'s code
(pablomiralles22/long-transformers, ``src/utils/rotary_embedding.py`` l. 20, 40-41), which rotates the
whole model width before the heads are split and freezes every other pair (θ = 0): there each head
turns half of its pairs, at frequencies of its own. Half-split and neighbour pairs differ by a fixed
permutation of the projections' output dimensions, so they span the same models, not the same weights.

``RotaryEmbedding`` has no parameters, so a model's state dict is the same with it or without.
"""

from __future__ import annotations

from typing import Annotated

import torch
from torch import nn

from attention_zoo.option_types import Bounds, OptionType
from attention_zoo.registry import available, spec

ROPE_BASE = 10000.0  # RoFormer's θ base
RopeFraction = Annotated[float, Bounds(low=0, low_open=True, high=1)]  # of each head's dimensions


def supports_rope(name: str) -> bool:
    """Whether the attention ``name`` takes rotary positions (``rope=True`` at its registration); a
    ``ValueError`` listing the names if it is unknown."""
    return spec(name).rope


def check_rope(name: str) -> None:
    """A one-line ``ValueError`` naming ``name`` unless it takes rotary positions: a mixer takes its
    positions from its own recurrence; a built-in core that does not declare ``rope=True`` says why
    in its docstring."""
    entry = spec(name)
    if entry.rope:
        return
    if entry.mixer:
        reason = "a mixer takes its positions from its own recurrence"
    else:
        reason = (
            "it is not registered with rope=True (declared where the output depends on q, k only through q·k)"
        )
    takers = ", ".join(other for other in available() if spec(other).rope)
    raise ValueError(f"attention {name!r} does not take rotary positions: {reason}; cores that do: {takers}")


def rotated_dims(head_dim: int, fraction: float) -> int:
    """How many of ``head_dim`` dimensions ``fraction`` rotates, 2·⌊fraction·head_dim/2⌋; a one-line
    ``ValueError`` when ``fraction`` is outside (0, 1] or rotates no pair."""
    try:
        fraction = OptionType.of(RopeFraction).check(fraction)
    except ValueError as error:
        raise ValueError(f"rope_fraction {error}, got {fraction!r}") from None
    dims = 2 * int(fraction * head_dim / 2)
    if dims < 2:
        raise ValueError(
            f"rope_fraction={fraction:g} of head_dim={head_dim} rotates no pair of dimensions; "
            f"it must be at least {2 / head_dim:g}"
        )
    return dims


def rotate(x: torch.Tensor, positions: torch.Tensor, dims: int, base: float = ROPE_BASE) -> torch.Tensor:
    """x (B, H, N, D) with its first ``dims`` dimensions rotated by ``positions`` (N,) -> (B, H, N, D),
    in x's dtype. Pair j is dimensions (j, j + dims/2); the others pass unchanged."""
    half = dims // 2
    # in float64: at position p the angle p·θ_j keeps float32's precision in its cosine and sine even
    # for p in the thousands (float32 angles lose 1e-4 there)
    frequencies = base ** (-torch.arange(half, device=x.device, dtype=torch.float64) / half)  # (dims/2,)
    angles = positions.to(torch.float64)[:, None] * frequencies  # (N, dims/2)
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)  # (N, dims/2) each
    first, second, rest = (
        x[..., :half],
        x[..., half:dims],
        x[..., dims:],
    )  # (B, H, N, dims/2), .., (B, H, N, D − dims)
    return torch.cat([first * cos - second * sin, second * cos + first * sin, rest], dim=-1)


class RotaryEmbedding(nn.Module):
    """Rotates q and k (B, H, N, head_dim) by position: ``q, k = rotary(q, k)``.

    ``fraction`` of each head's dimensions are rotated (``rotated_dims``), at ``base`` (10000).
    ``positions`` (N,) default to 0 … N − 1; any other start gives the same q·k (a shift).
    """

    def __init__(self, head_dim: int, fraction: float = 1.0, base: float = ROPE_BASE) -> None:
        super().__init__()
        self.dims = rotated_dims(head_dim, fraction)
        self.base = base

    def forward(
        self, q: torch.Tensor, k: torch.Tensor, positions: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if positions is None:
            positions = torch.arange(q.shape[-2], device=q.device)
        return rotate(q, positions, self.dims, self.base), rotate(k, positions, self.dims, self.base)

    def extra_repr(self) -> str:
        return f"dims={self.dims}, base={self.base:g}"
