"""Kernelized attention (Chen et al. 2021, Skyformer §4.1): softmax replaced by a Gaussian kernel.

    out = κ(Q / p^¼, K / p^¼) V,   κ(x, y) = exp(−‖x − y‖² / 2),   p = head_dim

No row normalisation: §4.1 puts κ(·, ·) V in place of softmax's D⁻¹ exp(QKᵀ/√p) V, and the
authors' released code computes the same unnormalised product. ``skyformer`` approximates exactly
this quantity. The product runs through ``scaled_dot_product_attention`` on augmented features
(``gaussian_attention``), so it never holds the (n × n) kernel where a fused kernel exists.

Causal: κ(·, ·) V under softmax's lower-triangular mask, out_i = Σ_{j<=i} κ(q_i, k_j) v_j, §4.1's
kernel in place of exp(QKᵀ/√p) in masked attention; its (N × N + 1) boolean mask leaves SDPA's fused
kernels only where they take a mask.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from attention_zoo.parts.causality import causal_keys
from attention_zoo.parts.masking import check_inputs, zero_padding
from attention_zoo.registry import Probability, register_attention
from attention_zoo.state_sizes import every_key_and_value

# Fused kernels: the CPU's wants q, k, v of one size, CUDA's memory-efficient one float32 sizes in
# multiples of 4 (flash has no float32 kernel).
FEATURE_MULTIPLE = 4
EXCLUDED = torch.finfo(torch.float32).min / 2  # the key feature of a padded key: its exp(score) is 0
# Float32 rounding of a score (a sum of terms as large as ‖x‖² + ‖y‖²) can lift a key at distance 0
# above the extra key, i.e. give a weight above 1 — far above it when the norms are huge. Every score
# pays MARGIN·(‖x‖² + ‖y‖²), about the rounding bound of the score itself, so that every weight
# stays in [0, 1]: each weight is κ·exp(−MARGIN(‖x‖² + ‖y‖²)), within 3e-6 of κ for q and k of
# unit-variance entries at head_dim 32 (‖x‖² ≈ 5.7), the size of the float32 rounding of κ's own
# exponent at those norms.
MARGIN = 2.0**-22  # 4 units of float32 rounding, 2⁻²⁴


def gaussian_kernel(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """exp(−‖xᵢ − yⱼ‖² / 2) for every pair: (..., n, d), (..., m, d) -> (..., n, m).

    The squared distance is expanded as ‖x‖² + ‖y‖² − 2 x·y and clamped at zero, so the
    exponent is never positive and large norms cannot overflow.
    """
    half_sq_x = 0.5 * x.square().sum(dim=-1, keepdim=True)  # (..., n, 1)
    half_sq_y = 0.5 * y.square().sum(dim=-1)[..., None, :]  # (..., 1, m)
    half_sq_distance = (half_sq_x + half_sq_y - x @ y.transpose(-1, -2)).clamp_min(0)
    return torch.exp(-half_sq_distance)


def softmax_operands(
    x: torch.Tensor, y: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Queries, keys and values of the softmax attention whose value channels divided by its
    extra channel (index d) are κ(x, y) v.

    x: (B, H, n, d), y, v: (B, H, N, d), float32 with padded positions zeroed; mask (B, N) or None.
    Returns (B, H, n, F), (B, H, N + 1, F), (B, H, N + 1, F) with F = d + 2 rounded up to a
    multiple of 4, c = ½ + MARGIN: query [x, 1, c‖x‖², 0…]; key [y, −c‖y‖² (EXCLUDED if padded),
    0…] and the extra key [0, 0, 1, 0…]; value [v, 0…] and the extra value [0, 1, 0…]. Each is
    assembled by concatenation only (whose backward is views of the gradient), no padding copy.
    """
    batch, heads, length, dim = x.shape
    width = -(-(dim + 2) // FEATURE_MULTIPLE) * FEATURE_MULTIPLE
    half_sq_x = (0.5 + MARGIN) * x.square().sum(dim=-1, keepdim=True)  # (B, H, n, 1)
    key_feature = -(0.5 + MARGIN) * y.square().sum(dim=-1, keepdim=True)  # (B, H, N, 1)
    if mask is not None:
        key_feature = key_feature.masked_fill(~mask[:, None, :, None], EXCLUDED)

    def zeros(rows: int, columns: int) -> torch.Tensor:
        return x.new_zeros(batch, heads, rows, columns)

    extra_key = zeros(1, width)
    extra_key[..., dim + 1] = 1.0  # against the query's c‖x‖²
    extra_value = zeros(1, width)
    extra_value[..., dim] = 1.0  # the normaliser channel
    keys_length = y.shape[-2]
    queries = torch.cat([x, torch.ones_like(half_sq_x), half_sq_x, zeros(length, width - dim - 2)], dim=-1)
    keys = torch.cat(
        [torch.cat([y, key_feature, zeros(keys_length, width - dim - 1)], dim=-1), extra_key], dim=-2
    )
    values = torch.cat([torch.cat([v, zeros(keys_length, width - dim)], dim=-1), extra_value], dim=-2)
    return queries, keys, values


def gaussian_attention(
    x: torch.Tensor,
    y: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None,
    dropout: float = 0.0,
    causal: bool = False,
) -> torch.Tensor:
    """κ(x, y) v through ``scaled_dot_product_attention``: (B, H, n, d), (B, H, N, d), (B, H, N, d) ->
    (B, H, n, d), float32. It never holds the (n × N) kernel where a fused kernel exists (CPU, and
    CUDA's memory-efficient kernel).

    Since κ(x, y) = exp(x·y − ‖y‖²/2 − ‖x‖²/2), this is a softmax attention whose keys carry one more
    feature, −‖y‖²/2 (against a query feature 1), plus one extra key whose score is ‖x‖²/2 (a second
    query feature, against a key feature 1) and whose value is a one-hot extra channel. The softmax
    shares its normaliser Z between the value channels, Σⱼ exp(sⱼ) vⱼ / Z, and the extra channel,
    exp(‖x‖²/2) / Z, so their ratio is Σⱼ κ(x, yⱼ) vⱼ exactly. The extra key's score is never below
    another key's (it exceeds sⱼ by ‖x − yⱼ‖²/2, and by a margin against rounding, see ``MARGIN``), so
    it is the row maximum that the softmax subtracts: the extra channel is 1 / (1 + Σⱼ κ) ≥ 1/(n + 1)
    and cannot underflow. Padded keys get −∞-like feature values instead of −‖y‖²/2 (weight exactly 0,
    no mask tensor, so the fused path stays available); a row without a real key gives 0 / 1 = 0.

    Keys where ``mask`` (B, N) is False get weight 0; x, y, v carry zeros at padded positions (see
    ``softmax_operands``). ``dropout`` > 0 drops kernel entries (inverted scaling) through SDPA's own
    dropout; the normaliser comes from a call without it. ``causal`` (n = N): query i sees the keys
    j <= i and the extra key.
    """
    queries, keys, values = softmax_operands(x, y, v, mask)
    dim = x.shape[-1]
    allowed = causal_keys(x.shape[-2], x.device, extra_keys=1) if causal else None  # (n, N + 1)
    out = F.scaled_dot_product_attention(queries, keys, values, attn_mask=allowed, scale=1.0)  # (B, H, n, F)
    numerator, normaliser = out[..., :dim], out[..., dim : dim + 1]
    if dropout > 0:
        dropped = F.scaled_dot_product_attention(
            queries, keys, values, attn_mask=allowed, dropout_p=dropout, scale=1.0
        )
        numerator = dropped[..., :dim]
    return numerator / normaliser


@register_attention("kernelized", causal=True, rope=True)
class KernelizedAttention(nn.Module):
    """Exact (quadratic-time) Gaussian-kernel attention. q, k, v: (B, H, N, D) -> (B, H, N, D).

    Padded keys get kernel weight zero. Runs in float32 with autocast off; the output has the
    input dtype. Memory is linear in N on a fused ``scaled_dot_product_attention`` backend.

    ``attention_dropout`` drops entries of the kernel matrix κ before it multiplies V, in training
    only, with inverted scaling: out = (κ ⊙ M / (1 − p)) V, M ~ Bernoulli(1 − p) — the Skyformer
    authors' code (``SoftmaxAttention_RBF``: dropout on exp(·) before the product with V). The
    dropout is SDPA's own, on the augmented softmax; the normaliser channel comes from a second
    call without dropout, so a dropped entry of the extra key cannot hit it.

    State size: the keys and values of every position, 2 · seq_len · dim, causal or not.
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
        scale = self.head_dim**-0.25
        with torch.autocast(device_type=q.device.type, enabled=False):
            out = gaussian_attention(
                zero_padding(q.float(), mask) * scale,
                zero_padding(k.float(), mask) * scale,
                zero_padding(v.float(), mask),
                mask,
                dropout=self.attention_dropout if self.training else 0.0,
                causal=self.causal,
            )
        return out.to(q.dtype)
