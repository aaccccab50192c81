"""Exact softmax attention (Vaswani et al. 2017): softmax(Q Kᵀ / √d) V.

Runs through ``torch.nn.functional.scaled_dot_product_attention`` so that a fused kernel (flash /
memory-efficient on a GPU, flash on the CPU) never holds the (n × n) matrix; padded keys get a
large negative additive bias.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from attention_zoo.masking import check_inputs, key_padding_bias
from attention_zoo.registry import Probability, register_attention


@register_attention("standard", rope=True)
class StandardAttention(nn.Module):
    """softmax(QKᵀ/√d)V with a key-padding mask. q, k, v: (B, H, N, D) -> (B, H, N, D).

    ``attention_dropout`` drops entries of the attention matrix softmax(QKᵀ/√d) before it
    multiplies V, in training only, with inverted scaling (SDPA's ``dropout_p``) — as both the
    Nyströmformer and the Skyformer authors' ``SoftmaxAttention``. (The CPU's fused kernel has no
    dropout, so training with dropout > 0 there takes SDPA's quadratic-memory path.)
    """

    def __init__(
        self, *, head_dim: int, num_heads: int, seq_len: int, attention_dropout: Probability = 0.0
    ) -> None:
        super().__init__()
        self.head_dim = head_dim
        self.attention_dropout = attention_dropout

    def forward(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        check_inputs(q, k, v, mask)
        dropout = self.attention_dropout if self.training else 0.0
        return F.scaled_dot_product_attention(
            q, k, v, attn_mask=key_padding_bias(mask, q.dtype), dropout_p=dropout
        )
