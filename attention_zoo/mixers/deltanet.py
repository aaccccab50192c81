"""DeltaNet (Schlag, Irie and Schmidhuber 2021; Yang, Wang, Zhang, Shen and Kim, NeurIPS 2024): fla's
``DeltaNet`` layer (flash-linear-attention 0.6.0, ``fla/layers/delta_net.py:34-289``) in plain PyTorch,
as a mixer in place of multi-head attention; and what Gated DeltaNet (``mixers.gated_deltanet``) adds
to it.

The layer, at fla's defaults (``qk_activation='silu'``, ``qk_norm='l2'``, ``use_beta``,
``use_short_conv``; l. 75-168): q and k projected to ``key_dim`` (fla: ``expand_k·dim``), v to
``expand_v·dim``, all without bias; a depthwise causal short convolution of ``conv_size`` taps and SiLU
on each (fla's ``ShortConvolution``, here ``parts.short_conv``; l. 137-156); ``heads`` heads;
β = sigmoid(``b_proj``(x)) per head, doubled with ``allow_neg_eigval`` (l. 238-244); the delta rule
with q and k L2-normalised in it, q scaled by the head key width^-1/2 (``parts.delta_chunks``; l.
258-268); each head's output RMS-normalised (``o_norm``, a weight of ones, float32), times swish of
``g_proj``(x) with ``use_gate`` (l. 280-284); ``o_proj``. Weights keep ``nn.Linear``'s and
``nn.Conv1d``'s initialisation: fla sets its own in the model around the layer, not in the layer. fla's
options left at their defaults are not options here; ``heads`` (fla's ``num_heads``, a name the model's
shape argument holds here) defaults to 2, the setting of
Zoology's DeltaNet runs at width 64 (``zoology/experiments/models_repo.py:236-244``), where fla's 4
is for its width of 1024.

``bidirectional`` (the harness's choice: fla's layer is causal only; ``parts.directions``): the delta
rule also runs over the reversed sequence with the same q, k, v and β (and decay), the short
convolutions run once, and the two outputs are averaged before the norm. Padding: q, k, v, β (and the
log decay) are zero at padded positions, where a step with β = 0 and no decay leaves the state as it
is; the short convolutions are causal, so padding after the real positions reaches none of them.
Causal: the one-directional layer, fla's own; ``causal=True`` needs ``bidirectional=false``.

``kernel`` (``parts.fla_kernels``): fla's ``chunk_delta_rule`` on CUDA with fla installed (``auto``,
``fla``), the chunk form of ``parts.delta_chunks`` otherwise (``torch``). fla's layer itself switches to
its recurrent kernel at 64 tokens or fewer (l. 188); the chunk form runs at every length here.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from attention_zoo.parts.causality import require_for_causal
from attention_zoo.parts.delta_chunks import delta_rule
from attention_zoo.parts.directions import both_ways
from attention_zoo.parts.fla_kernels import Kernel, check_kernel
from attention_zoo.parts.gated_heads import GatedHeads, head_widths
from attention_zoo.parts.gated_norm import GatedRMSNorm
from attention_zoo.parts.short_conv import ShortConvolution
from attention_zoo.registry import PositiveFloat, PositiveInt, register_mixer


class DeltaHeads(nn.Module):
    """The layer of the module docstring for the mixer ``NAME``: x (B, L, dim), mask (B, L) bool or
    None -> (B, L, dim). A subclass with a decay gives it (``decays``) and takes it (``attend``). Its
    state is each head's (key width × value width) matrix, as GLA's and RetNet's: the key width and the
    state size are those of ``parts.gated_heads``, with ``key_dim`` null the model's width."""

    NAME: str
    EXPAND_K = 1.0  # fla's expand_k: key_dim null is dim
    key_width = classmethod(GatedHeads.key_width.__func__)
    state_size = classmethod(GatedHeads.state_size.__func__)

    def __init__(
        self,
        dim: int,
        key_dim: int | None,
        expand_v: float,
        heads: int,
        conv: tuple[int, bool],
        use_gate: bool,
        allow_neg_eigval: bool,
        norm_eps: float,
        bidirectional: bool,
        kernel: Kernel,
        chunk_size: int | None,
        causal: bool,
    ) -> None:
        super().__init__()
        require_for_causal(self.NAME, causal, "bidirectional", bidirectional, False)
        check_kernel(self.NAME, kernel)
        key_dim = self.key_width(dim, key_dim)
        self.kernel, self.chunk_size = kernel, chunk_size
        self.head_k, self.head_v = head_widths(self.NAME, dim, key_dim, expand_v, heads)
        value_dim = self.head_v * heads
        self.q_proj, self.k_proj = (nn.Linear(dim, key_dim, bias=False) for _ in range(2))
        self.v_proj = nn.Linear(dim, value_dim, bias=False)
        self.b_proj = nn.Linear(dim, heads, bias=False)
        conv_size, conv_bias = conv
        self.q_conv1d, self.k_conv1d = (ShortConvolution(key_dim, conv_size, conv_bias) for _ in range(2))
        self.v_conv1d = ShortConvolution(value_dim, conv_size, conv_bias)
        self.g_proj = nn.Linear(dim, value_dim, bias=False) if use_gate else None
        self.o_norm = (
            GatedRMSNorm(self.head_v, norm_eps) if use_gate else nn.RMSNorm(self.head_v, eps=norm_eps)
        )
        self.o_proj = nn.Linear(value_dim, dim, bias=False)
        self.beta_scale = 2.0 if allow_neg_eigval else 1.0
        self.directions = 2 if bidirectional else 1

    def decays(self, x: torch.Tensor) -> list[torch.Tensor]:
        """The recurrence's inputs beyond q, k, v and β, from x (B, L, dim): none (no decay)."""
        return []

    def attend(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, beta: torch.Tensor, mask: torch.Tensor | None
    ) -> torch.Tensor:
        """One direction: q, k (B, L, H, K), v (B, L, H, V), beta (B, L, H), zero at padding ->
        (B, L, H, V)."""
        return delta_rule(q, k, v, beta, None, name=self.NAME, kernel=self.kernel, chunk=self.chunk_size)

    def core(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        b: torch.Tensor,
        decays: list[torch.Tensor],
        mask: torch.Tensor | None,
    ) -> torch.Tensor:
        """The recurrence after the projections, in one direction or both: q, k (B, L, H, K), v
        (B, L, H, V) after their short convolutions, the β logits b (B, L, H) and ``decays`` ->
        (B, L, H, V), averaged over the directions."""
        beta = torch.sigmoid(b.float()) * self.beta_scale  # (B, L, H)
        return both_ways([self.attend] * self.directions, [q, k, v, beta, *decays], mask)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        q = F.silu(self.q_conv1d(self.q_proj(x))).unflatten(-1, (-1, self.head_k))  # (B, L, H, K)
        k = F.silu(self.k_conv1d(self.k_proj(x))).unflatten(-1, (-1, self.head_k))  # (B, L, H, K)
        v = F.silu(self.v_conv1d(self.v_proj(x))).unflatten(-1, (-1, self.head_v))  # (B, L, H, V)
        o = self.core(q, k, v, self.b_proj(x), self.decays(x), mask)  # (B, L, H, V)
        if self.g_proj is not None:  # fla's FusedRMSNormGated: norm, then swish of the gate
            o = self.o_norm(o, self.g_proj(x).unflatten(-1, (-1, self.head_v)))
        else:
            with torch.autocast(x.device.type, enabled=False):
                o = self.o_norm(o.float())  # fla's RMSNorm, in float32
        return self.o_proj(o.flatten(-2).to(x.dtype))  # (B, L, dim)


@register_mixer("deltanet", budget_option="key_dim", causal=True)
class DeltaNet(DeltaHeads):
    """DeltaNet as a mixer (module docstring): x (B, L, dim), mask (B, L) bool or None -> (B, L, dim).

    State size: each head's (head key width × head value width) matrix per direction, key_dim ·
    (expand_v · dim / heads) · (2 if bidirectional else 1), Zoology's ``num_heads · head_k_dim ·
    head_v_dim`` (``zoology/mixers/delta_net.py:291-295``); key_dim null is dim (fla's expand_k = 1).
    The short convolutions' ``conv_size - 1`` inputs are not counted, as Zoology does not count them.
    """

    NAME = "deltanet"

    def __init__(
        self,
        *,
        dim: int,
        seq_len: int,
        key_dim: PositiveInt | None = None,
        expand_v: PositiveFloat = 1.0,
        heads: PositiveInt = 2,
        conv_size: PositiveInt = 4,
        conv_bias: bool = False,
        use_gate: bool = False,
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
