"""Exact softmax attention (Vaswani et al. 2017): softmax(Q Kᵀ / √d) V.

Runs through ``torch.nn.functional.scaled_dot_product_attention`` so that a fused kernel (flash /
memory-efficient on a GPU, flash on the CPU) never holds the (n × n) matrix; padded keys get a
large negative additive bias. Causal: the lower-triangular mask of the Transformer decoder (Vaswani
et al. 2017, §3.2.3), SDPA's ``is_causal`` without padding, else one bias of both (an (N × N) tensor).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from attention_zoo.parts.causality import causal_padding_bias
from attention_zoo.parts.masking import check_inputs, key_padding_bias
from attention_zoo.registry import Probability, register_attention
from attention_zoo.state_sizes import every_key_and_value


@register_attention("standard", causal=True, rope=True)
class StandardAttention(nn.Module):
    """softmax(QKᵀ/√d)V with a key-padding mask. q, k, v: (B, H, N, D) -> (B, H, N, D).

    ``attention_dropout`` drops entries of the attention matrix softmax(QKᵀ/√d) before it
    multiplies V, in training only, with inverted scaling (SDPA's ``dropout_p``) — as both the
    Nyströmformer and the Skyformer authors' ``SoftmaxAttention``. (The CPU's fused kernel has no
    dropout, so training with dropout > 0 there takes SDPA's quadratic-memory path.)

    State size: the keys and values of every position, 2 · seq_len · dim (Zoology's attention,
    ``zoology/mixers/attention.py``), causal or not.
    """

    def __init__(
        self,
        *,
        head_dim: int,
        num_heads: int,
        seq_len: int,
        attention_dropout: Probability = 0.0,
        causal: bool = False,
    ) -> None:
        super().__init__()
        self.head_dim = head_dim
        self.attention_dropout = attention_dropout
        self.causal = causal

    state_size = staticmethod(every_key_and_value)

    def forward(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        check_inputs(q, k, v, mask)
        dropout = self.attention_dropout if self.training else 0.0
        if self.causal:
            bias = None if mask is None else causal_padding_bias(mask, q.shape[-2], q.dtype, q.device)
            return F.scaled_dot_product_attention(
                q, k, v, attn_mask=bias, dropout_p=dropout, is_causal=bias is None
            )
        return F.scaled_dot_product_attention(
            q, k, v, attn_mask=key_padding_bias(mask, q.dtype), dropout_p=dropout
        )
