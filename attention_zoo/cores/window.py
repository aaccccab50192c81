"""``window``: softmax(QKᵀ/√d)V where each query attends only to the keys within ±w/2 of it, and to
nothing else (no global tokens): the core of the locality sweep, which asks how much of a task's
accuracy needs more than a window of w tokens.

Query i attends to the keys j with |i − j| <= ⌊w/2⌋: for odd w that is w keys, (w − 1)/2 on each
side and the query's own; for even w it is w + 1 keys, w/2 on each side and its own (a symmetric
band has an odd number of keys). Memory is O(N · w), never (N × N): the band is computed in chunks
(``attention_zoo.cores.band``, shared with ``longformer``). Causal: the band's past half, the query and
the ⌊w/2⌋ keys before it.
"""

from __future__ import annotations

import torch
from torch import nn

from attention_zoo.cores.band import band_attention
from attention_zoo.parts.masking import attend_in_float32, check_inputs, real_tokens
from attention_zoo.registry import PositiveInt, register_attention


@register_attention("window", approximates="standard", budget_option="window", causal=True, rope=True)
class WindowAttention(nn.Module):
    """Softmax attention within a band of ±⌊window/2⌋ positions. q, k, v: (B, H, N, D) -> (B, H, N, D);
    float32 inside.

    ``window=256`` (128 keys on each side) is the band of ``longformer``'s default, Longformer-257 of
    the Nyströmformer paper's Table 1 (HuggingFace's ``attention_window=256`` counts both sides without
    the query): at its default this core equals ``longformer`` with no global tokens, so a sweep over
    ``window`` meets the published Longformer row at 256. Where ⌊window/2⌋ >= N − 1 (window >= 2N − 2)
    every query sees every key and this is exact softmax attention. Padded keys never receive attention;
    a query with no real key in its band (a padded one) gets a finite average.

    State size: the keys and values a query reads, 2 · min(2⌊w/2⌋ + 1, seq_len) · dim, or
    2 · min(⌊w/2⌋ + 1, seq_len) · dim causal (as ``longformer``'s band).
    """

    def __init__(
        self, *, head_dim: int, num_heads: int, seq_len: int, window: PositiveInt = 256, causal: bool = False
    ) -> None:
        super().__init__()
        self.window = window
        self.causal = causal

    @staticmethod
    def state_size(*, seq_len: int, dim: int, window: int, causal: bool, **_: object) -> int:
        keys = window // 2 + 1 if causal else 2 * (window // 2) + 1
        return 2 * min(keys, seq_len) * dim

    def forward(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        check_inputs(q, k, v, mask)
        real = real_tokens(q, mask)
        return attend_in_float32(band_attention, q, k, v, real, self.window // 2, self.causal)
