"""GLA, gated linear attention (Yang, Wang, Shen, Panda and Kim, ICML 2024): fla's
``GatedLinearAttention`` layer (flash-linear-attention 0.6.0, ``fla/layers/gla.py:29-305``) in plain
PyTorch, as a mixer in place of multi-head attention.

The layer, at fla's defaults (l. 76-97): q and k of ``key_dim`` (fla: ``expand_k·dim``, 0.5·dim), v
and the output gate of ``expand_v·dim``, in ``heads`` heads (fla's ``num_heads``); the forget gate
through a low-rank projection (``dim → gate_low_rank_dim → key_dim``, with a bias), α_t =
exp(logsigmoid(·) / ``gate_logit_normalizer``), one decay per key dimension (l. 241); the recurrence
S_t = diag(α_t) S_{t-1} + k_t v_tᵀ, o_t = q_tᵀ S_t / √(head key width)
(``attention_zoo.parts.gated_chunks``, the vector decay); each head's output RMS-normalised, times
swish of the output gate (``FusedRMSNormGated``, l. 291-295); ``o_proj``
(``attention_zoo.parts.gated_heads``). ``use_short_conv`` and ``conv_size``: fla's short convolution
on q, k and v (l. 85-86, 137-156), off by default as fla's. fla's other options left at their defaults
are not options here: no feature map on q and k, no clamp of the gate, keys and values for every head.

``bidirectional`` (the harness's choice: fla's layer is causal only; ``attention_zoo.parts.directions``):
the recurrence also runs over the reversed sequence, with the same q, k, v and gates, and the two
outputs are averaged before the norm. Padding: q, k, v and the log decays are zero at padded
positions, which so write nothing and decay nothing. Causal: the one-directional layer, fla's own;
``causal=True`` needs ``bidirectional=false``.

``kernel`` (``attention_zoo.parts.fla_kernels``): fla's ``chunk_gla`` on CUDA with fla installed
(``auto``, ``fla``), the chunk form here otherwise (``torch``). fla's layer itself switches to its
recurrent kernel at 64 tokens or fewer (l. 198); the chunk kernel runs at every length here.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from attention_zoo.parts.fla_kernels import Kernel
from attention_zoo.parts.gated_heads import GatedHeads
from attention_zoo.registry import PositiveFloat, PositiveInt, register_mixer


@register_mixer("gla", budget_option="key_dim", causal=True)
class GatedLinearAttention(GatedHeads):
    """GLA as a mixer (module docstring): x (B, L, dim), mask (B, L) bool or None -> (B, L, dim).

    State size: each head's (head key width × head value width) matrix per direction, key_dim ·
    (expand_v · dim / heads) · (2 if bidirectional else 1) (Zoology's ``key_dim * head_v_dim``,
    ``zoology/mixers/gla.py:277-282``; the short convolution's taps not counted); key_dim null is dim / 2.
    """

    NAME = "gla"
    EXPAND_K = 0.5  # fla's expand_k

    def __init__(
        self,
        *,
        dim: int,
        seq_len: int,
        key_dim: PositiveInt | None = None,
        expand_v: PositiveFloat = 1.0,
        heads: PositiveInt = 4,
        gate_low_rank_dim: PositiveInt = 16,
        gate_logit_normalizer: PositiveFloat = 16.0,
        norm_eps: PositiveFloat = 1e-5,
        bidirectional: bool = True,
        kernel: Kernel = "auto",
        chunk_size: PositiveInt | None = None,
        use_short_conv: bool = False,
        conv_size: PositiveInt = 4,
        causal: bool = False,
    ) -> None:
        shape = (dim, key_dim, expand_v, heads, norm_eps, bidirectional)
        super().__init__(*shape, kernel, chunk_size, causal, conv_size if use_short_conv else None)
        self.gk_proj = nn.Sequential(
            nn.Linear(dim, gate_low_rank_dim, bias=False),
            nn.Linear(gate_low_rank_dim, self.q_proj.out_features),
        )
        self.gate_logit_normalizer = gate_logit_normalizer

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        q, k = self.queries_and_keys(x)  # (B, L, H, K) each
        gates = F.logsigmoid(self.gk_proj(x).float()) / self.gate_logit_normalizer  # (B, L, key_dim)
        return self.mix(x, q, k, gates.unflatten(-1, (-1, self.head_k)), mask)  # (B, L, dim)
