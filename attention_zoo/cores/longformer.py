"""Longformer's sliding-window attention (Beltagy et al. 2020): softmax(QKᵀ/√d)V where each token
attends to the ``window`` tokens centred on it, w = (window − 1) / 2 on each side, plus optional
global tokens.

``window=257`` (128 on each side) is the "Longformer-257" of the Nyströmformer paper's Table 1
(HuggingFace's ``attention_window=256``, which counts the two sides without the token itself).
With ``global_tokens=g > 0`` the first g real tokens of each sequence attend to every key and every
query attends to them, as in Longformer's classification setting. Memory is O(N · window), never
(N × N): see ``LongformerAttention._attend``.

Causal: the band restricted to the past, each token attends to itself and the w = (window − 1) / 2
tokens before it, as Longformer's autoregressive language models attend to the left only (Beltagy
et al. 2020, §4). Global tokens have no causal form there (the paper adds them for its fine-tuned,
non-causal tasks, §3.1): ``causal=True`` needs ``global_tokens=0``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from attention_zoo.cores.band import PAD_SCORE, band_attention, band_scores, unchunk
from attention_zoo.parts.causality import require_for_causal
from attention_zoo.parts.masking import attend_in_float32, check_inputs, key_padding_bias, real_tokens
from attention_zoo.registry import NonNegativeInt, OddPositiveInt, register_attention


@register_attention("longformer", approximates="standard", causal=True, rope=True)
class LongformerAttention(nn.Module):
    """Sliding-window softmax attention. q, k, v: (B, H, N, D) -> (B, H, N, D); float32 inside.

    Where the window covers the whole sequence (``window >= 2N − 1``) this is exact softmax
    attention. Padded keys never receive attention; global tokens are counted once (the band
    excludes them and they enter as keys of their own).

    No ``attention_dropout``: Nyströmformer's Table 1 times the attention alone.

    State size: the keys and values a query reads, 2 · min(window, seq_len) · dim, or 2 · min(w + 1,
    seq_len) · dim causal (Zoology's sliding window, ``zoology/mixers/slide_attn.py``); with global
    tokens, whose rows read every key, 2 · seq_len · dim.
    """

    def __init__(
        self,
        *,
        head_dim: int,
        num_heads: int,
        seq_len: int,
        window: OddPositiveInt = 257,
        global_tokens: NonNegativeInt = 0,
        causal: bool = False,
    ) -> None:
        super().__init__()
        require_for_causal("longformer", causal, "global_tokens", global_tokens, 0)
        self.window = window
        self.global_tokens = global_tokens
        self.causal = causal

    @staticmethod
    def state_size(
        *, seq_len: int, dim: int, window: int, global_tokens: int, causal: bool, **_: object
    ) -> int:
        require_for_causal("longformer", causal, "global_tokens", global_tokens, 0)
        keys = seq_len if global_tokens else (window // 2 + 1 if causal else window)
        return 2 * min(keys, seq_len) * dim

    def forward(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        check_inputs(q, k, v, mask)
        real = real_tokens(q, mask)
        return attend_in_float32(self._attend, q, k, v, real)

    def global_positions(self, real: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The first g real positions of each sequence: indices (B, g) and whether each exists (B, g)."""
        order = torch.argsort(~real, dim=-1, stable=True)[:, : self.global_tokens]
        exists = torch.arange(order.shape[-1], device=real.device) < real.sum(-1, keepdim=True)
        return order, exists

    def _attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, real: torch.Tensor) -> torch.Tensor:
        """float32 q, k, v (B, H, N, D) and real (B, N) bool -> (B, H, N, D): the band of
        ``attention_zoo.cores.band`` (memory O(N · window)), then the global tokens."""
        if not self.global_tokens:
            return band_attention(q, k, v, real, self.window // 2, causal=self.causal)
        batch, heads, length, dim = q.shape
        positions, exists = self.global_positions(real)
        real_band = real.scatter(1, positions, False)  # global keys enter once, as keys of their own
        queries, scores, values, _ = band_scores(q, k, v, real_band, self.window // 2)

        index = positions[:, None, :, None].expand(-1, heads, -1, dim)  # (B, H, g, D)
        global_keys, global_values = k.gather(2, index), v.gather(2, index)  # (B, H, g, D)
        # every query's scores with the global keys: (B, H, chunks, c, g)
        global_scores = torch.einsum("bhscd,bhgd->bhscg", queries, global_keys) * dim**-0.5
        global_scores = global_scores.masked_fill(~exists[:, None, None, None, :], PAD_SCORE)
        weights = torch.softmax(torch.cat([scores, global_scores], dim=-1), dim=-1)
        band_weights, global_weights = weights.split([scores.shape[-1], global_scores.shape[-1]], dim=-1)
        # the band's part plus the global keys' part: (B, H, chunks, c, D)
        out = band_weights @ values + torch.einsum("bhscg,bhgd->bhscd", global_weights, global_values)
        out = unchunk(out, length)  # (B, H, N, D)
        # the global tokens' own rows: attention over every real key
        bias = key_padding_bias(real, q.dtype)
        return out.scatter(2, index, F.scaled_dot_product_attention(q.gather(2, index), k, v, attn_mask=bias))
