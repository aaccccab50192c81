"""Multi-head self-attention around any core of the zoo."""

from __future__ import annotations

import torch
from torch import nn


class MultiHeadSelfAttention(nn.Module):
    """Q/K/V projections, a core, the output projection.

    forward(x: (batch, seq, dim), mask: (batch, seq) bool or None) -> (batch, seq, dim).
    """

    def __init__(self, dim: int, num_heads: int, core: nn.Module, dropout: float = 0.0) -> None:
        super().__init__()
        if dim % num_heads:
            raise ValueError(f"dim ({dim}) must be divisible by num_heads ({num_heads})")
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.core = core
        self.out = nn.Linear(dim, dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        batch, seq, dim = x.shape
        # q, k, v stacked: (3, batch, heads, seq, head_dim)
        qkv = self.qkv(x).view(batch, seq, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        heads = self.core(qkv[0], qkv[1], qkv[2], mask)  # (batch, heads, seq, head_dim)
        return self.dropout(self.out(heads.transpose(1, 2).reshape(batch, seq, dim)))
