"""Multi-head self-attention around any core of the zoo."""

from __future__ import annotations

import torch
from torch import nn

from attention_zoo.parts.rotary import RotaryEmbedding, check_rope
from attention_zoo.registry import spec_of


class MultiHeadSelfAttention(nn.Module):
    """Q/K/V projections to ``qkv_dim`` (default ``dim``), a core, the output projection back to ``dim``.

    forward(x: (batch, seq, dim), mask: (batch, seq) bool or None) -> (batch, seq, dim).
    ``bias=False`` drops the biases of all four projections (the LRA code's attention).
    ``rope_fraction`` (None: off) rotates that fraction of each head's q and k dimensions by position
    after the projections, before the core (``attention_zoo.parts.rotary``); a core that does not take
    rotary positions (``attention_zoo.check_rope``) is refused with one line.
    """

    def __init__(
        self,
        dim: int,
        num_heads: int,
        core: nn.Module,
        dropout: float = 0.0,
        qkv_dim: int | None = None,
        bias: bool = True,
        rope_fraction: float | None = None,
    ) -> None:
        super().__init__()
        qkv_dim = qkv_dim or dim
        if qkv_dim % num_heads:
            raise ValueError(f"qkv width ({qkv_dim}) must be divisible by num_heads ({num_heads})")
        self.num_heads = num_heads
        self.head_dim = qkv_dim // num_heads
        self.qkv = nn.Linear(dim, 3 * qkv_dim, bias=bias)
        self.core = core
        self.out = nn.Linear(qkv_dim, dim, bias=bias)
        self.dropout = nn.Dropout(dropout)
        self.rotary = None if rope_fraction is None else RotaryEmbedding(self.head_dim, rope_fraction)
        if self.rotary is not None:
            entry = spec_of(core)
            if entry is None:
                raise ValueError(
                    f"rotary positions need a registered attention core, got {type(core).__name__}"
                )
            check_rope(entry.name)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        batch, seq, _ = x.shape
        # q, k, v stacked: (3, batch, heads, seq, head_dim)
        qkv = self.qkv(x).view(batch, seq, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)  # (batch, heads, seq, head_dim) each
        if self.rotary is not None:
            q, k = self.rotary(q, k)
        heads = self.core(q, k, v, mask)  # (batch, heads, seq, head_dim)
        return self.dropout(self.out(heads.transpose(1, 2).reshape(batch, seq, -1)))
