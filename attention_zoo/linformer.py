"""Linformer attention (Wang et al. 2020): keys and values projected along the sequence axis.

    out = softmax(Q (Eᵀ K)ᵀ / √d) (Fᵀ V),   E, F: (seq_len, proj_dim) learned

E and F are shared across heads (the paper's "headwise sharing"). Padded keys and values are
zeroed before the projection, so padded positions contribute nothing; an input of length
n ≤ seq_len uses the first n rows of E and F.
"""

from __future__ import annotations

import torch
from torch import nn

from attention_zoo.masking import check_inputs, zero_padding
from attention_zoo.registry import PositiveInt, register_attention


@register_attention("linformer", approximates="standard", budget_option="proj_dim")
class LinformerAttention(nn.Module):
    """Low-rank softmax attention. q, k, v: (B, H, N, D) with N ≤ seq_len -> (B, H, N, D).

    Parameters ``key_proj`` (E) and ``value_proj`` (F): (seq_len, proj_dim), initialised from
    N(0, 1/proj_dim) so a projected row has the scale of a sum of N/proj_dim inputs.
    """

    def __init__(self, *, head_dim: int, num_heads: int, seq_len: int, proj_dim: PositiveInt = 256) -> None:
        super().__init__()
        self.seq_len = seq_len
        self.scale = head_dim**-0.5
        std = proj_dim**-0.5
        self.key_proj = nn.Parameter(torch.randn(seq_len, proj_dim) * std)
        self.value_proj = nn.Parameter(torch.randn(seq_len, proj_dim) * std)

    def forward(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        check_inputs(q, k, v, mask)
        length = q.shape[2]
        if length > self.seq_len:
            raise ValueError(
                f"linformer was built for sequences of at most seq_len={self.seq_len}, got length {length}; "
                f"build it with seq_len >= {length}"
            )
        e = self.key_proj[:length].to(k.dtype)
        f = self.value_proj[:length].to(v.dtype)
        keys = torch.einsum("bhnd,nk->bhkd", zero_padding(k, mask), e)  # (B, H, proj_dim, D)
        values = torch.einsum("bhnd,nk->bhkd", zero_padding(v, mask), f)
        weights = torch.softmax(q @ keys.transpose(-1, -2) * self.scale, dim=-1)  # (B, H, N, proj_dim)
        return (weights @ values).to(q.dtype)
