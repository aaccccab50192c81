"""Based's linear attention (Arora, Eyuboglu, Zhang, Timalsina, Alberti, Zinsley, Zou, Rudra and Ré,
ICML 2024): fla's ``BasedLinearAttention`` (flash-linear-attention 0.6.0, ``fla/layers/based.py:17-136``,
itself adapted from Zoology's ``Based``, ``zoology/mixers/based.py:57-232``) in plain PyTorch, as a
mixer in place of multi-head attention.

The layer: q and k projected to ``feature_dim`` per head, v to dim / ``heads`` per head (fla's
``num_heads``); q and k through the second-order Taylor feature map φ
(``attention_zoo.parts.feature_maps``: φ(q)·φ(k) = 1 + q·k/√d + (q·k)²/(2d), d = ``feature_dim``);
each position's output the normalised linear attention y_t = Σ_s φ(q_t)·φ(k_s) v_s / (Σ_s
φ(q_t)·φ(k_s) + ``eps``) (fla's ``forward_reference``, l. 116-136; Zoology l. 203-209); ``o_proj``.

One direction (``bidirectional=false``, the sources' causal form, fla l. 130): s ≤ t, the chunk form
of ``attention_zoo.parts.gated_chunks`` with no decay, its normaliser carried as one more value column
of ones. ``bidirectional`` (the default, the encoder being non-causal): s over the whole sequence, the
non-causal form both sources define (fla ``causal=False``, l. 132; Zoology l. 208), one sum of
φ(k_s) v_sᵀ over all positions, in place of the forward and backward passes the other recurrent
mixers combine; ``causal=True`` needs ``bidirectional=false``. Padding: φ(k) and v are zero at padded
positions, which so add nothing to any sum. fla's and Zoology's default of 12 heads does not divide
this harness's widths (64); ``heads=1`` is Zoology's own setting in its recall experiments
(``zoology/experiments/models_repo.py:48-56``). Zoology's rotary option (off by default) is not
carried over.

``kernel`` (``attention_zoo.parts.fla_kernels``, one direction only): fla's ``chunk_simple_gla``
without decay (the kernel fla's ``chunk_linear_attn`` calls) on the feature-mapped q and k, on CUDA
with fla installed (``auto``, ``fla``); the chunk form here otherwise (``torch``). fla's layer calls
its ``parallel_based`` kernel by default, which computes the same attention without forming φ.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from attention_zoo.parts.causality import require_for_causal
from attention_zoo.parts.directions import zeroed_at_padding
from attention_zoo.parts.feature_maps import taylor_features, taylor_size
from attention_zoo.parts.fla_kernels import Kernel, check_kernel
from attention_zoo.parts.gated_chunks import gated_linear_attention
from attention_zoo.registry import PositiveFloat, PositiveInt, register_mixer


def normalised_linear_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, eps: float, attend
) -> torch.Tensor:
    """Σ_s q_t·k_s v_s / (Σ_s q_t·k_s + eps) with the sums ``attend(q, k, values)`` forms: q, k
    (B, L, H, F), v (B, L, H, V) -> (B, L, H, V) in float32. The normaliser is the last of the values."""
    with torch.autocast(q.device.type, enabled=False):
        values = F.pad(v.float(), (0, 1), value=1.0)  # (B, L, H, V + 1): v and a column of ones
        out = attend(q.float(), k.float(), values)  # (B, L, H, V + 1)
        return out[..., :-1] / (out[..., -1:] + eps)


def every_position(q: torch.Tensor, k: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """q_tᵀ Σ_s k_s values_sᵀ over all s: q, k (B, L, H, F), values (B, L, H, V) -> (B, L, H, V)."""
    return torch.einsum("blhf,bhfv->blhv", q, torch.einsum("blhf,blhv->bhfv", k, values))


@register_mixer("based", budget_option="feature_dim", causal=True)
class Based(nn.Module):
    """Based's linear attention as a mixer (module docstring): x (B, L, dim), mask (B, L) bool or
    None -> (B, L, dim).

    State size: per head, the sums of φ(k) v ᵀ and of φ(k), with E = 1 + d + d(d+1)/2 Taylor features
    of d = feature_dim: heads · (dim / heads) · E + heads · E = (dim + heads) · E
    (Zoology's ``state_size``, ``zoology/mixers/based.py:228-232``), one way or both: the
    bidirectional (non-causal) form keeps the same sums, over the whole sequence.
    """

    def __init__(
        self,
        *,
        dim: int,
        seq_len: int,
        feature_dim: PositiveInt = 16,
        heads: PositiveInt = 1,
        eps: PositiveFloat = 1e-12,
        bidirectional: bool = True,
        kernel: Kernel = "auto",
        chunk_size: PositiveInt | None = None,
        causal: bool = False,
    ) -> None:
        super().__init__()
        if dim % heads:
            raise ValueError(f"attention 'based': dim ({dim}) must be a multiple of heads ({heads})")
        require_for_causal("based", causal, "bidirectional", bidirectional, False)
        check_kernel("based", kernel)
        self.feature_dim, self.head_v = feature_dim, dim // heads
        self.q_proj, self.k_proj = (nn.Linear(dim, heads * feature_dim, bias=False) for _ in range(2))
        self.v_proj = nn.Linear(dim, dim, bias=False)
        self.o_proj = nn.Linear(dim, dim, bias=False)
        self.eps, self.kernel, self.chunk_size = eps, kernel, chunk_size
        self.bidirectional = bidirectional

    @staticmethod
    def state_size(
        *, dim: int, feature_dim: int, heads: int, bidirectional: bool, causal: bool, **_: object
    ) -> int:
        require_for_causal("based", causal, "bidirectional", bidirectional, False)
        return (dim + heads) * taylor_size(feature_dim)

    def causal_sums(self, q: torch.Tensor, k: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        """q_tᵀ Σ_{s ≤ t} k_s values_sᵀ: the chunk form, or fla's kernel (``kernel``)."""
        attend = gated_linear_attention
        return attend(q, k, values, None, 1.0, name="based", kernel=self.kernel, chunk=self.chunk_size)

    def attend(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None
    ) -> torch.Tensor:
        """The core after the projections: q, k (B, L, H, feature_dim), v (B, L, H, V) -> (B, L, H, V)
        in float32, over s ≤ t or (``bidirectional``) every s."""
        q, k = taylor_features(q), taylor_features(k)  # (B, L, H, E)
        k, v = zeroed_at_padding([k, v], mask)  # padded positions add to no sum
        sums = every_position if self.bidirectional else self.causal_sums
        return normalised_linear_attention(q, k, v, self.eps, sums)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        features = (-1, self.feature_dim)
        q, k = (proj(x).unflatten(-1, features) for proj in (self.q_proj, self.k_proj))  # (B, L, H, F)
        v = self.v_proj(x).unflatten(-1, (-1, self.head_v))  # (B, L, H, V)
        return self.o_proj(self.attend(q, k, v, mask).flatten(-2).to(x.dtype))  # (B, L, dim)
