"""The gated RMS norm on the outputs of fla's recurrent layers, in plain PyTorch.

Two orders, both over the last dimension with a learned weight (ones at first): GLA and RetNet
normalise each head's values, then multiply by swish of the output gate (fla's ``FusedRMSNormGated``,
``fla/modules/norm/fused_norm_gate.py:967``); Mamba-2 multiplies by SiLU of the gate first, then
normalises (fla's ``RMSNormGated(norm_before_gate=False)``, ``fla/modules/norm/layernorm_gated.py:526``,
its reference ``rms_norm_ref`` l. 462-483, after the authors' ``mamba_ssm``). Swish and SiLU are the
same function, x·sigmoid(x).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class GatedRMSNorm(nn.Module):
    """x, gate (..., width) -> (..., width): ``norm(x)·silu(gate)``, or ``norm(x·silu(gate))`` with
    ``gate_first``; the norm is RMSNorm with ``eps`` and a weight of ``width``, in float32."""

    def __init__(self, width: int, eps: float, gate_first: bool = False) -> None:
        super().__init__()
        self.norm = nn.RMSNorm(width, eps=eps)
        self.gate_first = gate_first

    def forward(self, x: torch.Tensor, gate: torch.Tensor) -> torch.Tensor:
        with torch.autocast(x.device.type, enabled=False):
            x, gate = x.float(), F.silu(gate.float())
            return self.norm(x * gate) if self.gate_first else self.norm(x) * gate
