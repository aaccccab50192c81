"""Hyena (Poli et al., ICML 2023): the order-2 Hyena operator of Zoology's ``zoology/mixers/hyena.py``
(``Hyena``, lines 216-358; its implicit filter ``Filter``, 114-213), as a mixer in place of multi-head
attention.

The operator: ``in_proj`` (with bias) to three streams x1, x2, v of ``dim`` channels; a depthwise causal
``short_filter`` of ``short_filter_order`` taps (a ``Conv1d`` with bias) over all three; the pre-gate
v·x1; the long convolution with the implicit filter h plus the skip ``bias`` (Zoology's ``fftconv_ref``
with ``gelu=False``); the post-gate ·x2; ``out_proj`` (with bias). The implicit filter of lag l (0-based)
is ``MLP(z_l)·exp(-t_l |δ|)``: z_l the positional embedding [t_l, cos(f ω_l), -sin(f ω_l)] with
t_l = l / (seq_len - 1), ω_l = 2π l / seq_len and ``(emb_dim - 1) / 2`` frequencies f from 1e-4 to
``(emb_dim - 1) / 2 - 1``, trained at ``lr_pos_emb`` (Zoology's ``PositionalEmbedding``, 64-86); the MLP
``Linear(emb_dim, filter_order)``, Sin, ``num_inner_mlps`` × (``Linear(filter_order, filter_order)``,
Sin), ``Linear(filter_order, dim, bias=False)``, one Sin of trained frequency (initial ``w``) shared by
all, all trained at ``lr`` without weight decay (51-61, 162-185); the decays δ fixed, spaced linearly
from log(target)/slow_decay_pct to log(target)/fast_decay_pct over the channels
(``ExponentialModulation``, 89-110). Zoology's defaults, one head and one block (its ``num_heads`` and
``num_blocks`` reshape the channels and the sequence; neither is offered here).

``filter_len`` (the budget): the filter's taps, lags 0..filter_len-1 of the filter Zoology evaluates at
every lag; null keeps every lag (Zoology's). Its state is the inputs those taps reach, ``dim`` values
per tap (Zoology's ``state_size``, ``d_model · sequence_length``, is the full filter's).

``bidirectional`` (the harness's choice for the encoder; Zoology's ``Hyena(bidirectional=True)`` calls a
``filter_rev`` that its ``Filter`` lacks): a second implicit filter (its own MLP, embedding and
modulation) for the lags 0, -1, ..., -(filter_len-1), added to the first as Zoology's ``fftconv_ref``
adds ``k_rev`` (``k_f + conj(k_rev_f)``: lag 0 from both), so that one FFT applies both sides, as
``s4d``'s two-sided kernel does. A forward and a flipped backward pass combined (``mamba``) would cost
two FFTs and two sets of gates for the same linear time-invariant mixing; the gates and the short
filter, position-wise and causal, are shared. Padding: the short filter is causal, so padded positions
(after the real ones) reach real ones through the long filter only, and the gated v is zeroed there
before it. Causal: the one-directional operator, Zoology's own; ``causal=True`` needs
``bidirectional=false``.
"""

from __future__ import annotations

import math
from typing import Annotated

import torch
import torch.nn.functional as F
from torch import nn

from attention_zoo.option_types import Bounds, Odd
from attention_zoo.parts.causality import require_for_causal
from attention_zoo.parts.long_conv import fft_convolution
from attention_zoo.registry import NonNegativeInt, PositiveFloat, PositiveInt, Probability, register_mixer

EmbeddingDim = Annotated[int, Bounds(low=3), Odd()]  # time, then a cosine and a sine per frequency
OpenUnit = Annotated[float, Bounds(low=0, high=1, low_open=True, high_open=True)]


def optimised_at(parameters: object, lr: float | None) -> None:
    """Train ``parameters`` without weight decay, at ``lr`` (None: the run's), as Zoology registers them."""
    for parameter in parameters:
        parameter._optim = {"weight_decay": 0.0} | ({} if lr is None else {"lr": lr})


class Sin(nn.Module):
    """sin(freq · x) with a trained frequency per feature (Zoology's ``Sin``): (..., order)."""

    def __init__(self, order: int, w: float) -> None:
        super().__init__()
        self.freq = nn.Parameter(torch.full((order,), w))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sin(self.freq * x)


class ImplicitFilter(nn.Module):
    """Zoology's ``Filter.filter`` (module docstring): forward(taps) -> h (channels, taps), lags 0..taps-1."""

    def __init__(
        self,
        channels: int,
        seq_len: int,
        emb_dim: int,
        order: int,
        num_inner_mlps: int,
        w: float,
        lrs: tuple[float | None, float | None],
        decay_pcts: tuple[float, float],
        target: float,
    ) -> None:
        super().__init__()
        bands = (emb_dim - 1) // 2
        t = torch.linspace(0, 1, seq_len)[:, None]  # (L, 1)
        omega = 2 * math.pi * torch.arange(seq_len)[:, None] / seq_len  # (L, 1)
        z = torch.exp(-1j * torch.linspace(1e-4, bands - 1, bands) * omega)  # (L, bands)
        self.z = nn.Parameter(torch.cat([t, z.real, z.imag], dim=-1))  # (L, emb_dim)
        self.register_buffer("t", t)
        sin = Sin(order, w)
        layers = [nn.Linear(emb_dim, order), sin]
        for _ in range(num_inner_mlps):
            layers += [nn.Linear(order, order), sin]
        self.mlp = nn.Sequential(*layers, nn.Linear(order, channels, bias=False))
        optimised_at(self.mlp.parameters(), lrs[0])
        optimised_at([self.z], lrs[1])
        fast, slow = decay_pcts
        deltas = torch.linspace(math.log(target) / slow, math.log(target) / fast, channels)  # (channels,)
        self.register_buffer("deltas", deltas)

    def forward(self, taps: int) -> torch.Tensor:
        h = self.mlp(self.z[:taps]) * torch.exp(-self.t[:taps] * self.deltas.abs())  # (taps, channels)
        return h.t()  # (channels, taps)


@register_mixer("hyena", budget_option="filter_len", causal=True)
class Hyena(nn.Module):
    """The Hyena operator as a mixer (module docstring): x (B, L, dim), mask (B, L) or None -> (B, L, dim).

    State size: the inputs the long filter reaches, ``dim`` per tap and direction: dim · min(filter_len,
    seq_len) · (2 if bidirectional else 1); with filter_len null, Zoology's ``d_model · sequence_length``
    (``zoology/mixers/hyena.py:360``) per direction. The short filter's ``short_filter_order - 1``
    inputs are not counted, as Zoology does not count them.
    """

    def __init__(
        self,
        *,
        dim: int,
        seq_len: int,
        filter_len: PositiveInt | None = None,
        filter_order: PositiveInt = 64,
        emb_dim: EmbeddingDim = 3,
        num_inner_mlps: NonNegativeInt = 2,
        short_filter_order: PositiveInt = 3,
        w: PositiveFloat = 1.0,
        lr: PositiveFloat | None = 1e-3,
        lr_pos_emb: PositiveFloat | None = 1e-5,
        fast_decay_pct: PositiveFloat = 0.3,
        slow_decay_pct: PositiveFloat = 1.5,
        target: OpenUnit = 1e-2,
        bidirectional: bool = True,
        dropout: Probability = 0.0,
        causal: bool = False,
    ) -> None:
        super().__init__()
        require_for_causal("hyena", causal, "bidirectional", bidirectional, False)
        self.seq_len, self.filter_len = seq_len, filter_len
        self.in_proj = nn.Linear(dim, 3 * dim)
        self.short_filter = nn.Conv1d(3 * dim, 3 * dim, short_filter_order, groups=3 * dim)
        implicit = (dim, seq_len, emb_dim, filter_order, num_inner_mlps, w, (lr, lr_pos_emb))
        modulation = ((fast_decay_pct, slow_decay_pct), target)
        directions = 2 if bidirectional else 1
        self.filters = nn.ModuleList(ImplicitFilter(*implicit, *modulation) for _ in range(directions))
        self.bias = nn.Parameter(torch.randn(dim))  # the skip of fftconv_ref, Zoology's Filter.bias
        self.dropout = nn.Dropout(dropout)
        self.out_proj = nn.Linear(dim, dim)

    @staticmethod
    def state_size(
        *, dim: int, seq_len: int, filter_len: int | None, bidirectional: bool, causal: bool, **_: object
    ) -> int:
        require_for_causal("hyena", causal, "bidirectional", bidirectional, False)
        taps = seq_len if filter_len is None else min(filter_len, seq_len)
        return dim * taps * (2 if bidirectional else 1)

    def kernel(self, length: int) -> torch.Tensor:
        """The long filter over lags 0..L-1, then (bidirectional) lags -L..-1 (``parts.long_conv``'s
        layout): (dim, L) or (dim, 2L); zero beyond ``filter_len`` taps on either side."""
        taps = length if self.filter_len is None else min(self.filter_len, length)
        forward = F.pad(self.filters[0](taps), (0, length - taps))  # (dim, L)
        if len(self.filters) == 1:
            return forward
        backward = F.pad(self.filters[1](taps), (0, 2 * length - taps))  # lags 0, -1, ...: (dim, 2L)
        return F.pad(forward, (0, length)) + backward.flip(-1).roll(1, -1)  # lag -j at 2L - j: (dim, 2L)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        length = x.shape[1]
        if length > self.seq_len:
            raise ValueError(f"attention 'hyena': {length} tokens exceed its filter's seq_len {self.seq_len}")
        order = self.short_filter.kernel_size[0]
        u = F.pad(self.in_proj(x).transpose(1, 2), (order - 1, 0))  # (B, 3·dim, order - 1 + L)
        x1, x2, v = self.short_filter(u).chunk(3, dim=1)  # (B, dim, L) each
        v = self.dropout(v * x1)  # the pre-gate
        if mask is not None:
            v = v * mask[:, None, :]  # padded positions enter no long filter
        with torch.autocast(x.device.type, enabled=False):  # the filter and the FFT in float32
            v = v.float()
            y = fft_convolution(v, self.kernel(length)) + v * self.bias[:, None]  # (B, dim, L)
        return self.out_proj((y.to(x2.dtype) * x2).transpose(1, 2))  # the post-gate: (B, L, dim)
