"""Mamba (Gu and Dao, 2023): the selective SSM block in plain PyTorch, after johnma2006/mamba-minimal's
``MambaBlock``, as a mixer in place of multi-head attention.

The block: ``in_proj`` to x and the gate z (``expand·dim`` channels each); per direction a depthwise
causal convolution of width ``d_conv`` (``attention_zoo.parts.short_conv``), SiLU, the input-dependent
step ``Δ = softplus(dt_proj(.))`` (through ``dt_rank``), B and C from ``x_proj``; a real diagonal
``A = -exp(A_log)`` (S4D-Real init, ``A = -(1, 2, ..., N)``) and the D skip; the selective scan
(``attention_zoo.parts.scan``, chunked, no loop over positions); the output gated by ``SiLU(z)``;
``out_proj``. Initialisation as the authors' ``mamba_simple.py``: ``dt_proj``'s bias is the inverse
softplus of a step drawn log-uniformly in [dt_min, dt_max]; ``A_log`` and D have no weight decay (their
``_no_weight_decay``, here ``_optim``).

``bidirectional`` (the encoder is not causal; ``attention_zoo.parts.directions``): a second convolution
and SSM (their own weights) run over the reversed sequence; the two outputs, each with its own D skip, are
averaged before the gate, which with ``in_proj`` and ``out_proj`` both directions share, as Vision Mamba's
bidirectional block does (Zhu et al. 2024, ``if_devide_out``). Averaging keeps the output at the scale of
the one-directional block. Padding: padded positions are zeroed before the convolution and get Δ = 0, a
step that leaves the state as it is, so they reach no real position in either direction; the reversed
sequence then starts with its padding, which passes the zero state on unchanged, and so equals each
sequence reversed within its own length. Causal: the one-directional block, the authors' own;
``causal=True`` needs ``bidirectional=false`` (a line naming the option, not a silent override).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from attention_zoo.parts.causality import require_for_causal
from attention_zoo.parts.directions import both_ways
from attention_zoo.parts.scan import selective_scan
from attention_zoo.parts.short_conv import ShortConvolution
from attention_zoo.registry import PositiveFloat, PositiveInt, Probability, register_mixer


class SelectiveSSM(nn.Module):
    """One direction: causal depthwise conv, SiLU, selective scan, D skip:
    u (B, L, E) zero at padding, mask (B, L) bool or None -> (B, L, E)."""

    def __init__(
        self,
        channels: int,
        d_state: int,
        d_conv: int,
        dt_rank: int,
        dt_min: float,
        dt_max: float,
        chunk: int | None,
    ) -> None:
        super().__init__()
        self.dt_rank, self.d_state, self.chunk = dt_rank, d_state, chunk
        self.conv1d = ShortConvolution(channels, d_conv)
        self.x_proj = nn.Linear(channels, dt_rank + 2 * d_state, bias=False)
        self.dt_proj = nn.Linear(dt_rank, channels)
        nn.init.uniform_(self.dt_proj.weight, -(dt_rank**-0.5), dt_rank**-0.5)
        dt = torch.exp(torch.rand(channels) * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min))
        with torch.no_grad():
            self.dt_proj.bias.copy_(dt + torch.log(-torch.expm1(-dt)))  # softplus(bias) = dt
        self.A_log = nn.Parameter(
            torch.log(torch.arange(1, d_state + 1, dtype=torch.float32)).repeat(channels, 1)
        )
        self.D = nn.Parameter(torch.ones(channels))
        for parameter in (self.A_log, self.D):
            parameter._optim = {"weight_decay": 0.0}

    def forward(self, u: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        h = F.silu(self.conv1d(u))  # (B, L, E)
        dt, B, C = self.x_proj(h).split([self.dt_rank, self.d_state, self.d_state], dim=-1)  # (B, L, R|N|N)
        delta = F.softplus(self.dt_proj(dt).float())  # (B, L, E)
        if mask is not None:
            delta = delta * mask[..., None]  # a padded step leaves the state as it is
        y = selective_scan(h, delta, -torch.exp(self.A_log.float()), B, C, self.chunk)  # (B, L, E)
        return y + h.float() * self.D


@register_mixer("mamba", budget_option="d_state", causal=True)
class Mamba(nn.Module):
    """The Mamba block as a mixer (module docstring): x (B, L, dim), mask (B, L) or None -> (B, L, dim).

    State size: the SSM state, d_state per inner channel and direction, d_state · expand · dim ·
    (2 if bidirectional else 1), whatever the length; the d_conv − 1 inputs the short convolution
    keeps are not counted (as Zoology counts Mamba's, ``zoology/mixers/mamba.py``).
    """

    def __init__(
        self,
        *,
        dim: int,
        seq_len: int,
        d_state: PositiveInt = 16,
        expand: PositiveInt = 2,
        d_conv: PositiveInt = 4,
        dt_rank: PositiveInt | None = None,
        dt_min: PositiveFloat = 0.001,
        dt_max: PositiveFloat = 0.1,
        bidirectional: bool = True,
        dropout: Probability = 0.0,
        scan_chunk: PositiveInt | None = None,
        causal: bool = False,
    ) -> None:
        super().__init__()
        if dt_min > dt_max:
            raise ValueError(f"attention 'mamba': dt_min ({dt_min}) must be at most dt_max ({dt_max})")
        require_for_causal("mamba", causal, "bidirectional", bidirectional, False)
        channels = expand * dim
        rank = math.ceil(dim / 16) if dt_rank is None else dt_rank
        self.in_proj = nn.Linear(dim, 2 * channels, bias=False)
        ssm = (channels, d_state, d_conv, rank, dt_min, dt_max, scan_chunk)
        self.directions = nn.ModuleList(SelectiveSSM(*ssm) for _ in range(2 if bidirectional else 1))
        self.out_proj = nn.Linear(channels, dim, bias=False)
        self.dropout = nn.Dropout(dropout)

    @staticmethod
    def state_size(
        *, dim: int, d_state: int, expand: int, bidirectional: bool, causal: bool, **_: object
    ) -> int:
        require_for_causal("mamba", causal, "bidirectional", bidirectional, False)
        return d_state * expand * dim * (2 if bidirectional else 1)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        u, z = self.in_proj(x).chunk(2, dim=-1)  # (B, L, E) each
        y = both_ways(self.directions, [u], mask)  # (B, L, E); padded u enters neither convolution
        return self.dropout(self.out_proj(y.to(z.dtype) * F.silu(z)))  # (B, L, dim)
