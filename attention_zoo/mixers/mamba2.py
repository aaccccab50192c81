"""Mamba-2 (Dao and Gu, ICML 2024): fla's ``Mamba2`` layer (flash-linear-attention 0.6.0,
``fla/layers/mamba2.py:105-715``, after the authors' ``mamba_ssm/modules/mamba2.py``) with one group
(``n_groups=1``), in plain PyTorch, as a mixer in place of multi-head attention.

The layer, at fla's defaults (l. 113-138): ``in_proj`` to the gate z (``expand·dim`` channels), xBC
(the ``expand·dim`` channels x, then B and C of ``d_state`` each) and one step input per head (heads
of ``headdim`` channels, fla's ``head_dim``); a depthwise causal convolution of width ``d_conv`` over
xBC, then SiLU (``attention_zoo.parts.short_conv``); Δ_t = softplus(dt + dt_bias) per head, dt_bias
the inverse softplus of a step drawn log-uniformly in [dt_min, dt_max] (floored at 1e-4, l. 210-219);
a scalar A_h = −exp(A_log_h) per head, exp(A_log) drawn uniformly in [1, 16] (l. 223-225); the SSD
recurrence h_t = exp(Δ_t A_h) h_{t-1} + Δ_t x_t B_tᵀ, y_t = h_t C_t + D_h x_t (``torch_forward``,
l. 600-678): a gated linear attention with q = C, k = B, v = Δ·x, the scalar decay Δ·A and no scale
(``attention_zoo.parts.gated_chunks``); y·SiLU(z), then RMS-normalised over the channels
(``RMSNormGated(norm_before_gate=False)``, ``attention_zoo.parts.gated_norm``); ``out_proj``. dt_bias,
A_log and D have no weight decay (their ``_no_weight_decay``, here ``_optim``). Left at fla's
defaults and not options: no bias in the projections, a bias in the convolution, Δ unclamped
(``dt_limit``), D one per head. ``headdim`` null is fla's 64, or expand·dim where that is narrower.

Against ``mamba`` (Mamba-1): the decay is one number per head (Δ_t A_h), not one per channel and state
dimension; B and C are shared by all heads and come from the convolved input, not from a projection
of it; heads of 64 channels make the recurrence a matrix product per chunk, so that it trains in
chunks of matrix products rather than a scan; and the gated output is normalised.

``bidirectional`` (as ``mamba``; ``attention_zoo.parts.directions``): a second convolution, dt_bias,
A_log and D (their own weights) run over the reversed sequence; the two outputs, each with its own D
skip, are averaged before the gate, which with ``in_proj``, the norm and ``out_proj`` both directions
share. Padding: xBC is zero at padded positions before and after the convolution (as fla's, l. 524),
and Δ is zero there, a step that leaves the state as it is. Causal: the one-directional layer;
``causal=True`` needs ``bidirectional=false``.

``kernel`` (``attention_zoo.parts.fla_kernels``): fla's ``chunk_simple_gla`` (the SSD recurrence with
a scalar decay) on CUDA with fla installed (``auto``, ``fla``); the chunk form here otherwise
(``torch``). fla's layer itself calls the authors' ``mamba_chunk_scan_combined`` when ``mamba_ssm`` is
installed, and its chunked PyTorch form otherwise.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from attention_zoo.parts.causality import require_for_causal
from attention_zoo.parts.directions import both_ways
from attention_zoo.parts.fla_kernels import Kernel, check_kernel
from attention_zoo.parts.gated_chunks import gated_linear_attention
from attention_zoo.parts.gated_norm import GatedRMSNorm
from attention_zoo.parts.short_conv import ShortConvolution
from attention_zoo.registry import PositiveFloat, PositiveInt, register_mixer

A_INIT_RANGE = (1.0, 16.0)  # A_h = -U(1, 16), fla's A_init_range
DT_INIT_FLOOR = 1e-4  # fla's dt_init_floor
HEADDIM = 64  # fla's head_dim: channels per head, unless expand·dim is narrower


class SSDDirection(nn.Module):
    """One direction: the convolution of xBC, Δ, the SSD recurrence and the D skip:
    xBC (B, L, E + 2N) and dt (B, L, H), zero at padding, mask (B, L) or None -> y (B, L, E)."""

    def __init__(
        self,
        channels: int,
        d_state: int,
        heads: int,
        d_conv: int,
        dt_min: float,
        dt_max: float,
        kernel: Kernel,
        chunk_size: int | None,
    ) -> None:
        super().__init__()
        self.channels, self.d_state, self.heads = channels, d_state, heads
        self.kernel, self.chunk_size = kernel, chunk_size
        self.conv1d = ShortConvolution(channels + 2 * d_state, d_conv)
        dt = torch.exp(torch.rand(heads) * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min))
        dt = dt.clamp(min=DT_INIT_FLOOR)
        self.dt_bias = nn.Parameter(dt + torch.log(-torch.expm1(-dt)))  # softplus(dt_bias) = dt
        self.A_log = nn.Parameter(torch.log(torch.empty(heads).uniform_(*A_INIT_RANGE)))
        self.D = nn.Parameter(torch.ones(heads))
        for parameter in (self.dt_bias, self.A_log, self.D):
            parameter._optim = {"weight_decay": 0.0}

    def ssd(
        self,
        x: torch.Tensor,
        B: torch.Tensor,
        C: torch.Tensor,
        delta: torch.Tensor,
        mask: torch.Tensor | None,
    ) -> torch.Tensor:
        """The SSD recurrence without the D skip, one group: x (B, L, H, P), B and C (B, L, N), delta
        (B, L, H), all zero at padding -> y (B, L, H, P)."""
        q, k = C[:, :, None], B[:, :, None]  # (B, L, 1, N): one group, every head reads the same B and C
        decay = -torch.exp(self.A_log.float()) * delta  # Δ_t A_h: (B, L, H)
        v = x * delta[..., None]  # Δ_t x_t: (B, L, H, P)
        return gated_linear_attention(
            q, k, v, decay, 1.0, name="mamba2", kernel=self.kernel, chunk=self.chunk_size
        )

    def forward(self, xBC: torch.Tensor, dt: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        xBC = F.silu(self.conv1d(xBC))  # (B, L, E + 2N)
        delta = F.softplus(dt.float() + self.dt_bias)  # (B, L, H)
        if mask is not None:  # padded positions write nothing and leave the state as it is
            xBC, delta = xBC * mask[..., None], delta * mask[..., None]
        x, B, C = xBC.split([self.channels, self.d_state, self.d_state], dim=-1)  # (B, L, E|N|N)
        x = x.unflatten(-1, (self.heads, -1))  # (B, L, H, P)
        return (self.ssd(x, B, C, delta, mask) + x * self.D[:, None]).flatten(-2)  # (B, L, E)


@register_mixer("mamba2", budget_option="d_state", causal=True)
class Mamba2(nn.Module):
    """Mamba-2 as a mixer (module docstring): x (B, L, dim), mask (B, L) bool or None -> (B, L, dim).

    State size: each head's (headdim × d_state) state per direction, d_state · expand · dim ·
    (2 if bidirectional else 1) (Zoology's ``2 * d_model * d_state`` at expand 2,
    ``zoology/mixers/mamba2.py:249-250``); the d_conv − 1 inputs the convolution keeps are not counted.
    """

    def __init__(
        self,
        *,
        dim: int,
        seq_len: int,
        d_state: PositiveInt = 128,
        expand: PositiveInt = 2,
        headdim: PositiveInt | None = None,
        d_conv: PositiveInt = 4,
        dt_min: PositiveFloat = 0.001,
        dt_max: PositiveFloat = 0.1,
        norm_eps: PositiveFloat = 1e-5,
        bidirectional: bool = True,
        kernel: Kernel = "auto",
        chunk_size: PositiveInt | None = None,
        causal: bool = False,
    ) -> None:
        super().__init__()
        channels = expand * dim
        headdim = min(HEADDIM, channels) if headdim is None else headdim
        if channels % headdim:
            raise ValueError(
                f"attention 'mamba2': expand · dim ({channels}) must be a multiple of headdim ({headdim})"
            )
        if dt_min > dt_max:
            raise ValueError(f"attention 'mamba2': dt_min ({dt_min}) must be at most dt_max ({dt_max})")
        require_for_causal("mamba2", causal, "bidirectional", bidirectional, False)
        check_kernel("mamba2", kernel)
        heads = channels // headdim
        self.widths = [channels, channels + 2 * d_state, heads]  # z, xBC, dt
        self.in_proj = nn.Linear(dim, sum(self.widths), bias=False)
        direction = (channels, d_state, heads, d_conv, dt_min, dt_max, kernel, chunk_size)
        self.directions = nn.ModuleList(SSDDirection(*direction) for _ in range(2 if bidirectional else 1))
        self.norm = GatedRMSNorm(channels, norm_eps, gate_first=True)
        self.out_proj = nn.Linear(channels, dim, bias=False)

    @staticmethod
    def state_size(
        *, dim: int, d_state: int, expand: int, bidirectional: bool, causal: bool, **_: object
    ) -> int:
        require_for_causal("mamba2", causal, "bidirectional", bidirectional, False)
        return d_state * expand * dim * (2 if bidirectional else 1)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        z, xBC, dt = self.in_proj(x).split(self.widths, dim=-1)  # (B, L, E), (B, L, E + 2N), (B, L, H)
        y = both_ways(self.directions, [xBC, dt], mask)  # (B, L, E)
        return self.out_proj(self.norm(y, z).to(x.dtype))  # (B, L, dim)
