"""Multi-head self-attention around any core of the zoo."""

from __future__ import annotations

import torch
from torch import nn


class MultiHeadSelfAttention(nn.Module):
    """Q/K/V projections to ``qkv_dim`` (default ``dim``), a core, the output projection back to ``dim``.

    forward(x: (batch, seq, dim), mask: (batch, seq) bool or None) -> (batch, seq, dim).
    ``bias=False`` drops the biases of all four projections (the LRA code's attention).
    """

    def __init__(
        self,
        dim: int,
        num_heads: int,
        core: nn.Module,
        dropout: float = 0.0,
        qkv_dim: int | None = None,
        bias: bool = True,
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

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        batch, seq, _ = x.shape
        # q, k, v stacked: (3, batch, heads, seq, head_dim)
        qkv = self.qkv(x).view(batch, seq, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        heads = self.core(qkv[0], qkv[1], qkv[2], mask)  # (batch, heads, seq, head_dim)
        return self.dropout(self.out(heads.transpose(1, 2).reshape(batch, seq, -1)))
