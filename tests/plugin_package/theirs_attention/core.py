"""``theirs``: softmax(QKᵀ / (temperature·√d))V, registered with the harness when imported."""

from __future__ import annotations

import math

import torch
from torch import nn

from attention_zoo.registry import PositiveFloat, register_attention


@register_attention("theirs")
class TemperedSoftmaxAttention(nn.Module):
    def __init__(self, *, head_dim: int, num_heads: int, seq_len: int, temperature: PositiveFloat = 1.0):
        super().__init__()
        self.scale = 1.0 / (temperature * math.sqrt(head_dim))

    def forward(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """q, k, v: (batch, heads, seq, head_dim); mask: (batch, seq) bool, True = real token."""
        keep = None if mask is None else mask[:, None, None, :]
        return nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=keep, scale=self.scale)
