"""The short depthwise causal convolution of Mamba, Mamba-2 and fla's layers: each channel of
position t from itself and the ``width - 1`` positions before it, on tokens in their own (B, L, E)
layout.

``ShortConvolution`` is an ``nn.Conv1d`` (depthwise: one filter per channel) whose forward is that
causal convolution, so that its weights, their initialisation and their names in a state dict are
``nn.Conv1d``'s (Mamba's ``conv1d``, the authors' ``mamba_simple.py``). Positions before the first
are zeros: a sequence that starts with zeros (a reversed sequence's leading padding, zeroed) gives
at its real positions what the sequence without them gives.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def causal_depthwise_conv(u: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """u (B, L, E), weight (E, 1, width), bias (E,) or None -> (B, L, E): position t from positions
    t - width + 1 .. t, zeros before the first. Seen as a (B, E, 1, L) image stored channels-last, the
    convolution reads and writes (B, L, E) rows as they lie, where ``conv1d`` on (B, E, L) would
    transpose the input and leave its output transposed for every later op."""
    width = weight.shape[-1]
    image = F.pad(u, (0, 0, width - 1, 0)).transpose(1, 2).unsqueeze(2)  # (B, E, 1, L + width - 1)
    out = F.conv2d(image, weight.unsqueeze(2), bias, groups=u.shape[-1])  # (B, E, 1, L)
    return out.squeeze(2).transpose(1, 2)  # (B, L, E), rows contiguous


class ShortConvolution(nn.Conv1d):
    """A depthwise ``nn.Conv1d`` of ``channels`` channels and ``width`` taps whose forward is causal:
    u (B, L, channels) -> (B, L, channels) (``causal_depthwise_conv``)."""

    def __init__(self, channels: int, width: int, bias: bool = True) -> None:
        super().__init__(channels, channels, width, groups=channels, bias=bias)

    def forward(self, u: torch.Tensor) -> torch.Tensor:
        return causal_depthwise_conv(u, self.weight, self.bias)
