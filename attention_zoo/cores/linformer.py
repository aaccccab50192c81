"""Linformer attention (Wang et al. 2020): keys and values projected along the sequence axis.

    out = softmax(Q (Eᵀ K)ᵀ / √d) (Fᵀ V),   E, F: (seq_len, proj_dim) learned

By default E and F are shared across heads (the paper's "headwise sharing") and each layer has its
own. Padded keys and values are zeroed before the projection, so padded positions contribute
nothing; an input of length n ≤ seq_len uses the first n rows of E and F.
"""

from __future__ import annotations

import torch
from torch import nn

from attention_zoo.parts.masking import check_inputs, zero_padding
from attention_zoo.registry import PositiveFloat, PositiveInt, register_attention


@register_attention("linformer", approximates="standard", budget_option="proj_dim", rope=True)
class LinformerAttention(nn.Module):
    """Low-rank softmax attention. q, k, v: (B, H, N, D) with N ≤ seq_len -> (B, H, N, D).

    Parameters ``key_proj`` (E) and ``value_proj`` (F): (seq_len, proj_dim), or
    (num_heads, seq_len, proj_dim) with ``per_head`` (head h projects with E[h], F[h]). With
    ``share_kv`` there is only ``key_proj``, which projects both keys and values (``value_proj``
    is None). ``init_std`` None draws them from N(0, 1/proj_dim), so a projected row has the scale
    of a sum of N/proj_dim inputs; a number draws them from N(0, init_std²). With ``share_layers``
    every layer of a model uses the first layer's matrices: the model calls ``tie_to(first)`` on
    the cores of its later layers (see ``attention_zoo.tie_layers``).

    Options that reproduce the authors' LRA code (``attention_linformer.py``: one matrix of shape
    (heads, proj_dim, seq_len) = this Eᵀ per head, used for keys and values, drawn from N(0, 0.02²)):

    - Skyformer: ``per_head=True, share_kv=True, init_std=0.02``, one matrix per layer;
    - Nyströmformer: the same with ``share_layers=True`` (its matrix is a class attribute, so one for
      every layer of the model).

    No ``attention_dropout``: the authors' ``LinformerAttention`` (both codes) drops nothing of its
    (N × proj_dim) attention matrix.

    No causal form: each projected key and value mixes every position.

    State size: the projected keys and values, proj_dim rows each, 2 · proj_dim · dim.
    """

    def __init__(
        self,
        *,
        head_dim: int,
        num_heads: int,
        seq_len: int,
        proj_dim: PositiveInt = 256,
        per_head: bool = False,
        share_kv: bool = False,
        share_layers: bool = False,
        init_std: PositiveFloat | None = None,
    ) -> None:
        super().__init__()
        self.seq_len = seq_len
        self.scale = head_dim**-0.5
        self.share_layers = share_layers
        self.equation = "bhnd,hnk->bhkd" if per_head else "bhnd,nk->bhkd"
        shape = (num_heads, seq_len, proj_dim) if per_head else (seq_len, proj_dim)
        std = proj_dim**-0.5 if init_std is None else init_std
        self.key_proj = nn.Parameter(torch.randn(shape) * std)
        self.value_proj = None if share_kv else nn.Parameter(torch.randn(shape) * std)

    def tie_to(self, first: LinformerAttention) -> None:
        """With ``share_layers``, use the projection matrices of ``first`` (the first layer's core,
        built with the same options) in place of this core's own: the same Parameters. Without it,
        do nothing."""
        if self.share_layers:
            self.key_proj, self.value_proj = first.key_proj, first.value_proj

    @staticmethod
    def state_size(*, dim: int, proj_dim: int, **_: object) -> int:
        return 2 * proj_dim * dim

    def forward(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        check_inputs(q, k, v, mask)
        length = q.shape[2]
        if length > self.seq_len:
            raise ValueError(
                f"linformer was built for sequences of at most seq_len={self.seq_len}, got length {length}; "
                f"build it with seq_len >= {length}"
            )
        e = self.key_proj[..., :length, :].to(k.dtype)  # E: (N, proj_dim), or (H, N, proj_dim) per head
        f = e if self.value_proj is None else self.value_proj[..., :length, :].to(v.dtype)
        keys = torch.einsum(self.equation, zero_padding(k, mask), e)  # (B, H, proj_dim, D)
        values = torch.einsum(self.equation, zero_padding(v, mask), f)  # (B, H, proj_dim, D)
        weights = torch.softmax(q @ keys.transpose(-1, -2) * self.scale, dim=-1)  # (B, H, N, proj_dim)
        return (weights @ values).to(q.dtype)
