"""What fla's GLA and RetNet layers share around their recurrence (``fla/layers/gla.py``,
``fla/layers/multiscale_retention.py``): q and k projected to ``key_dim``, v and the output gate to
``expand_v·dim``, all split into ``heads`` heads; where the layer's ``use_short_conv`` is on, a
depthwise causal convolution of ``conv_size`` taps and SiLU on each of q, k and v (fla's
``ShortConvolution``, ``fla/layers/gla.py:137-156``, off by default as fla's; ``parts.short_conv``),
causal, so that padding after the real positions reaches none of them; the gated linear attention of each head
(``gated_chunks``) in one direction or both (``directions``); each head's output RMS-normalised,
times swish of the output gate (``gated_norm``); ``o_proj``. The subclass gives the decay (and
anything it does to q and k). Weights keep ``nn.Linear``'s initialisation: fla sets its own in the
model around the layer, not in the layer.

State size: each head's (head key width × head value width) matrix, key_dim · expand_v·dim /
heads per direction, as Zoology counts GLA's (``key_dim * head_v_dim``,
``zoology/mixers/gla.py:277-282``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from attention_zoo.parts.causality import require_for_causal
from attention_zoo.parts.directions import both_ways
from attention_zoo.parts.fla_kernels import Kernel, check_kernel
from attention_zoo.parts.gated_chunks import gated_linear_attention
from attention_zoo.parts.gated_norm import GatedRMSNorm
from attention_zoo.parts.short_conv import ShortConvolution


def head_widths(name: str, dim: int, key_dim: int, expand_v: float, heads: int) -> tuple[int, int]:
    """(head key width, head value width) of ``heads`` heads over ``key_dim`` keys and
    ``expand_v·dim`` values; a one-line ``ValueError`` naming ``name`` when they do not split evenly."""
    value_dim = expand_v * dim
    if value_dim != int(value_dim):
        raise ValueError(f"attention {name!r}: expand_v · dim must be an integer, got {expand_v} · {dim}")
    for option, width in (("key_dim", key_dim), ("expand_v · dim", int(value_dim))):
        if width % heads:
            raise ValueError(f"attention {name!r}: {option} ({width}) must be a multiple of heads ({heads})")
    return key_dim // heads, int(value_dim) // heads


class GatedHeads(nn.Module):
    """The projections, heads, directions, norm and output of the module docstring; ``mix`` runs them
    around the subclass's q, k and log decays. A subclass names its mixer (``NAME``) and the width of
    its keys when ``key_dim`` is None (``EXPAND_K``·dim, fla's ``expand_k``)."""

    NAME: str
    EXPAND_K: float

    def __init__(
        self,
        dim: int,
        key_dim: int | None,
        expand_v: float,
        heads: int,
        norm_eps: float,
        bidirectional: bool,
        kernel: Kernel,
        chunk_size: int | None,
        causal: bool,
        conv_size: int | None = None,
    ) -> None:
        super().__init__()
        require_for_causal(self.NAME, causal, "bidirectional", bidirectional, False)
        check_kernel(self.NAME, kernel)
        self.kernel, self.chunk_size = kernel, chunk_size
        key_dim = self.key_width(dim, key_dim)
        self.head_k, self.head_v = head_widths(self.NAME, dim, key_dim, expand_v, heads)
        value_dim = self.head_v * heads
        self.q_proj, self.k_proj = (nn.Linear(dim, key_dim, bias=False) for _ in range(2))
        self.v_proj, self.g_proj = (nn.Linear(dim, value_dim, bias=False) for _ in range(2))
        self.g_norm_swish_gate = GatedRMSNorm(self.head_v, norm_eps)
        self.o_proj = nn.Linear(value_dim, dim, bias=False)
        self.directions = 2 if bidirectional else 1
        # fla's short convolutions (conv_bias false, its default), or none: conv_size None
        widths = (key_dim, key_dim, value_dim) if conv_size else ()
        self.convs = nn.ModuleList(ShortConvolution(width, conv_size, bias=False) for width in widths)

    @classmethod
    def key_width(cls, dim: int, key_dim: int | None) -> int:
        """``key_dim``, or ``EXPAND_K``·dim when it is None."""
        return int(cls.EXPAND_K * dim) if key_dim is None else key_dim

    @classmethod
    def state_size(
        cls,
        *,
        dim: int,
        key_dim: int | None,
        expand_v: float,
        heads: int,
        bidirectional: bool,
        causal: bool,
        **_: object,
    ) -> int:
        """key_dim · (expand_v·dim / heads) · (2 if bidirectional else 1) (module docstring)."""
        require_for_causal(cls.NAME, causal, "bidirectional", bidirectional, False)
        key_dim = cls.key_width(dim, key_dim)
        return key_dim * head_widths(cls.NAME, dim, key_dim, expand_v, heads)[1] * (2 if bidirectional else 1)

    def projected(self, x: torch.Tensor, which: int) -> torch.Tensor:
        """x (B, L, dim) -> q, k or v (``which`` 0, 1, 2) (B, L, width), after its short convolution and
        SiLU where the layer has them."""
        u = (self.q_proj, self.k_proj, self.v_proj)[which](x)  # (B, L, width)
        return F.silu(self.convs[which](u)) if self.convs else u

    def queries_and_keys(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """x (B, L, dim) -> q, k (B, L, H, head key width)."""
        heads = (-1, self.head_k)
        return self.projected(x, 0).unflatten(-1, heads), self.projected(x, 1).unflatten(-1, heads)

    def attend(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor, mask: torch.Tensor | None
    ) -> torch.Tensor:
        """One direction: q, k (B, L, H, K), v (B, L, H, V), g (B, L, H, K) or (B, L, H) -> (B, L, H, V)."""
        return gated_linear_attention(
            q, k, v, g, self.head_k**-0.5, name=self.NAME, kernel=self.kernel, chunk=self.chunk_size
        )

    def mix(
        self, x: torch.Tensor, q: torch.Tensor, k: torch.Tensor, g: torch.Tensor, mask: torch.Tensor | None
    ) -> torch.Tensor:
        """x (B, L, dim), its q, k (B, L, H, K) and log decays g -> (B, L, dim)."""
        v = self.projected(x, 2).unflatten(-1, (-1, self.head_v))  # (B, L, H, V)
        o = both_ways([self.attend] * self.directions, [q, k, v, g], mask)  # (B, L, H, V)
        gate = self.g_proj(x).unflatten(-1, (-1, self.head_v))  # (B, L, H, V)
        return self.o_proj(self.g_norm_swish_gate(o, gate).flatten(-2).to(x.dtype))  # (B, L, dim)
