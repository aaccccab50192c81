"""Gated DeltaNet (Yang, Kautz and Hatamizadeh, ICLR 2025): fla's ``GatedDeltaNet`` layer
(flash-linear-attention 0.6.0, ``fla/layers/gated_deltanet.py:30-357``) in plain PyTorch, as a mixer in
place of multi-head attention: DeltaNet's layer (``mixers.deltanet``) with a scalar decay per head and
step, S_t = α_t (I − β_t k_t k_tᵀ) S_{t−1} + β_t k_t v_tᵀ.

The decay and β as fla's kernel computes them from the layer's raw projections (``use_gate_in_kernel``,
``use_beta_sigmoid_in_kernel``, l. 301-318; ``fla/ops/gated_delta_rule/gate.py:21-46``):
log α_t = −exp(``A_log``) · softplus(``a_proj``(x) + ``dt_bias``), β_t = sigmoid(``b_proj``(x)),
doubled with ``allow_neg_eigval``. Their initialisation is the layer's (l. 154-166): A uniform in
[0, 16], ``A_log = log A``; ``dt_bias`` the inverse softplus of a step drawn log-uniformly in
[0.001, 0.1] and floored at 1e-4; neither has weight decay. Here they are computed before the kernel,
so that padded positions get log α = 0 and β = 0 (``parts.directions``), and fla's kernel is handed
them (``chunk_gated_delta_rule`` with ``g`` and ``beta``), its gate and sigmoid left off.

fla's defaults otherwise: ``expand_v`` 2, the output gate (``use_gate``), SiLU short convolutions of 4
taps on q, k and v. fla sizes the keys by ``num_heads · head_dim`` (6 · 256 at its width of 2048); here
``key_dim`` (null: dim, as Zoology's port, ``zoology/mixers/gated_delta_net.py:112-120``) and
``heads`` 2, as Zoology's runs at width 64 (``zoology/experiments/models_repo.py:265-277``). One
value head per key head (fla's ``num_v_heads`` left at its default). The bidirectional form, padding,
the causal mode and ``kernel``: as DeltaNet's.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from attention_zoo.mixers.deltanet import DeltaHeads
from attention_zoo.parts.delta_chunks import delta_rule
from attention_zoo.parts.fla_kernels import Kernel
from attention_zoo.registry import PositiveFloat, PositiveInt, register_mixer

DT_MIN, DT_MAX, DT_FLOOR = 0.001, 0.1, 1e-4  # the layer's fixed step range and floor
A_MAX = 16.0  # A is drawn uniformly in [0, A_MAX]


@register_mixer("gated_deltanet", budget_option="key_dim", causal=True)
class GatedDeltaNet(DeltaHeads):
    """Gated DeltaNet as a mixer (module docstring): x (B, L, dim), mask (B, L) bool or None -> (B, L, dim).

    State size: as DeltaNet's, key_dim · (expand_v · dim / heads) · (2 if bidirectional else 1),
    Zoology's ``num_heads · head_k_dim · head_v_dim`` (``zoology/mixers/gated_delta_net.py:300-304``);
    key_dim null is dim.
    """

    NAME = "gated_deltanet"

    def __init__(
        self,
        *,
        dim: int,
        seq_len: int,
        key_dim: PositiveInt | None = None,
        expand_v: PositiveFloat = 2.0,
        heads: PositiveInt = 2,
        conv_size: PositiveInt = 4,
        conv_bias: bool = False,
        use_gate: bool = True,
        allow_neg_eigval: bool = False,
        norm_eps: PositiveFloat = 1e-5,
        bidirectional: bool = True,
        kernel: Kernel = "auto",
        chunk_size: PositiveInt | None = None,
        causal: bool = False,
    ) -> None:
        shape = (dim, key_dim, expand_v, heads, (conv_size, conv_bias))
        super().__init__(
            *shape, use_gate, allow_neg_eigval, norm_eps, bidirectional, kernel, chunk_size, causal
        )
        self.a_proj = nn.Linear(dim, heads, bias=False)
        self.A_log = nn.Parameter(torch.log(torch.empty(heads).uniform_(0, A_MAX)))
        dt = torch.exp(torch.rand(heads) * (math.log(DT_MAX) - math.log(DT_MIN)) + math.log(DT_MIN))
        dt = dt.clamp(min=DT_FLOOR)
        self.dt_bias = nn.Parameter(dt + torch.log(-torch.expm1(-dt)))  # softplus(dt_bias) = dt
        for parameter in (self.A_log, self.dt_bias):
            parameter._optim = {"weight_decay": 0.0}

    def log_decay(self, a: torch.Tensor) -> torch.Tensor:
        """log α = −exp(A_log) · softplus(a + dt_bias) from the decay logits a = a_proj(x), (B, L, H),
        in float32 (fla's ``naive_gdn_gate``)."""
        return -torch.exp(self.A_log.float()) * F.softplus(a.float() + self.dt_bias.float())

    def decays(self, x: torch.Tensor) -> list[torch.Tensor]:
        """[log α] from x (B, L, dim): [(B, L, H)]."""
        return [self.log_decay(self.a_proj(x))]

    def attend(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        beta: torch.Tensor,
        g: torch.Tensor,
        mask: torch.Tensor | None,
    ) -> torch.Tensor:
        """One direction: q, k (B, L, H, K), v (B, L, H, V), beta and the log decay g (B, L, H), zero at
        padding -> (B, L, H, V)."""
        return delta_rule(q, k, v, beta, g, name=self.NAME, kernel=self.kernel, chunk=self.chunk_size)
