"""RetNet's multi-scale retention (Sun, Dong, Huang, Ma, Xia, Xue, Wang and Wei, 2023): fla's
``MultiScaleRetention`` layer (flash-linear-attention 0.6.0,
``fla/layers/multiscale_retention.py:30-314``) in plain PyTorch, as a mixer in place of multi-head
attention.

The layer, at fla's defaults (l. 71-90): q and k of ``key_dim`` (fla: ``expand_k·dim``, 1·dim), v and
the output gate of ``expand_v·dim`` (2·dim), in ``heads`` heads (fla's ``num_heads``, 8); q and k of
each head turned by rotary positions over the whole head (fla's ``RotaryEmbedding(dim=head_k_dim)``,
l. 173, 246: base 10000, halves paired, as ``attention_zoo.parts.rotary``; an odd head key width
leaves its last dimension unturned); a fixed decay per head,
γ_h = 1 − 2^(−5−h) for head h = 0 … H−1 (``fla/ops/retention/chunk.py:68``, the paper's §2.2); the
recurrence S_t = γ_h S_{t-1} + k_t v_tᵀ, o_t = q_tᵀ S_t / √(head key width)
(``attention_zoo.parts.gated_chunks``, the scalar decay); each head's output RMS-normalised, times
swish of the output gate (``FusedRMSNormGated``, l. 300-304); ``o_proj``
(``attention_zoo.parts.gated_heads``). ``use_short_conv`` and ``conv_size``: fla's short convolution
on q, k and v before the rotation (l. 80-81, 129-148), off by default as fla's. fla's other options
left at their defaults are not options here: no feature map, keys and values for every head.

``bidirectional`` (the harness's choice: fla's layer and the paper's retention are causal;
``attention_zoo.parts.directions``): the recurrence also runs over the reversed sequence, with the
same rotated q and k and the same decays, and the two outputs are averaged before the norm. Rotary
positions count from the start of the padded sequence; the scores depend on positions only through
their differences, so padding after a sequence moves nothing. Padding: q, k, v and the log decays
are zero at padded positions, which so write nothing and decay nothing. Causal: the one-directional
layer, fla's own; ``causal=True`` needs ``bidirectional=false``.

``kernel`` (``attention_zoo.parts.fla_kernels``): fla's ``chunk_simple_gla`` (the kernel fla's
``chunk_retention`` calls with these decays) on CUDA with fla installed (``auto``, ``fla``), the chunk
form here otherwise (``torch``). fla's layer switches kernels by length and mode (l. 192-197); the
chunk kernel runs at every length here.
"""

from __future__ import annotations

import torch

from attention_zoo.parts.fla_kernels import Kernel
from attention_zoo.parts.gated_heads import GatedHeads
from attention_zoo.parts.rotary import rotate
from attention_zoo.registry import PositiveFloat, PositiveInt, register_mixer


def retention_decays(heads: int) -> torch.Tensor:
    """log γ_h = log(1 − 2^(−5−h)) for h = 0 … heads − 1: (heads,) float32."""
    return torch.log1p(-(2.0 ** (-5.0 - torch.arange(heads, dtype=torch.float32))))


@register_mixer("retnet", budget_option="key_dim", causal=True)
class MultiScaleRetention(GatedHeads):
    """RetNet's retention as a mixer (module docstring): x (B, L, dim), mask (B, L) bool or None ->
    (B, L, dim).

    State size: each head's (head key width × head value width) matrix per direction, key_dim ·
    (expand_v · dim / heads) · (2 if bidirectional else 1), as Zoology counts GLA's
    (``zoology/mixers/gla.py:277-282``; Zoology has no RetNet); key_dim null is dim.
    """

    NAME = "retnet"
    EXPAND_K = 1.0  # fla's expand_k

    def __init__(
        self,
        *,
        dim: int,
        seq_len: int,
        key_dim: PositiveInt | None = None,
        expand_v: PositiveFloat = 2.0,
        heads: PositiveInt = 8,
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
        self.rotated = 2 * (self.head_k // 2)  # rotary positions turn pairs of dimensions
        self.register_buffer("log_decays", retention_decays(heads), persistent=False)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        q, k = self.queries_and_keys(x)  # (B, L, H, K) each
        positions = torch.arange(x.shape[1], device=x.device)
        if self.rotated:
            q, k = (rotate(t.transpose(1, 2), positions, self.rotated).transpose(1, 2) for t in (q, k))
        decays = self.log_decays.expand(*x.shape[:2], -1)  # (B, L, H)
        return self.mix(x, q, k, decays, mask)  # (B, L, dim)
