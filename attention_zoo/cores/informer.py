"""Informer's ProbSparse self-attention (Zhou et al. 2021), non-causal, as the Skyformer authors' code
runs it (their ``ProbAttention``, from the Informer authors' code): each query scores a sample of the
keys, the queries whose sampled scores peak most get full softmax attention and every other query
gets the mean of V. With every query selected it is exact softmax attention.

Padding differs from the reference, which ignores the mask (padded keys enter its softmax, sample and
mean of V, and padded queries can be selected): here each sequence samples among its own real keys,
the softmax and the mean of V run over real keys only, and only real queries can be selected.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from attention_zoo.parts.masking import (
    attend_in_float32,
    check_inputs,
    key_padding_bias,
    real_tokens,
    zero_padding,
)
from attention_zoo.registry import PositiveInt, register_attention
from attention_zoo.state_sizes import every_key_and_value

SAMPLE_CHUNK = 128  # queries whose sampled scores are taken at once


@register_attention("informer", approximates="standard", budget_option="num_features", rope=True)
class InformerAttention(nn.Module):
    """ProbSparse attention. q, k, v: (B, H, N, D) -> (B, H, N, D); float32 inside.

    For an input of N tokens, with factor c = ⌈num_features / ln seq_len⌉ (``seq_len``: the longest
    sequence the core is built for; the Skyformer code's ``in_nb_features`` and ``max_seq_len``):

    1. each query i samples U = min(c·⌈ln N⌉, N) keys uniformly with replacement (one draw of indices
       shared by the batch and the heads, from torch's global RNG) and scores them, s = q_i·k_j;
    2. its sparsity measure is M_i = max_j s − (Σ_j s) / N over the sampled keys;
    3. the u = min(c·⌈ln N⌉, N) queries of largest M get full softmax attention softmax(q_i Kᵀ/√d) V;
       every other query gets the mean of V.

    Under padding each sequence samples its real keys (index ⌊r·n_real⌋ into its real positions, for
    one shared uniform draw r) and N in step 2 is its number of real keys.

    ``num_features`` is the budget (the Skyformer code's ``in_nb_features``: 128 in its LRA runs);
    the Informer paper's own factor c = 5 corresponds to num_features ≈ 5 · ln seq_len.
    The sampled scores only choose the queries (no gradient flows through the choice), so they are
    taken without autograd, a chunk of queries at a time.

    No ``attention_dropout``: the authors' ``ProbAttention`` defines a dropout it never applies.

    No causal form that is exact: the paper's masked variant (its decoder; the authors'
    ``ProbAttention(mask_flag=True)``, Informer2020 ``models/attn.py``) samples each query's keys from
    the whole sequence (line 54) and ranks every query against the later ones (``M.topk``, line 60),
    so a later token changes which earlier queries attend and which take the cumulative sum of V
    (line 78).

    State size: every position's key and value, 2 · seq_len · dim: the active queries read them all;
    the budget sets how many queries are active, not this figure.
    """

    def __init__(
        self, *, head_dim: int, num_heads: int, seq_len: int, num_features: PositiveInt = 128
    ) -> None:
        super().__init__()
        self.num_features = num_features
        self.factor = math.ceil(num_features / math.log(seq_len)) if seq_len > 1 else num_features

    def sample_size(self, length: int) -> int:
        """U = u = min(c · ⌈ln N⌉, N): keys sampled per query and queries selected (⌈ln 1⌉ read as 1)."""
        return min(self.factor * max(math.ceil(math.log(length)), 1), length)

    def sample_keys(self, real: torch.Tensor) -> torch.Tensor:
        """Sampled key positions (B, N, U) for real (B, N) bool, from torch's global RNG.

        One uniform draw r (N, U) for the whole batch; sequence b takes its real position number
        ⌊r · n_real(b)⌋, so each sequence samples uniformly among its own real keys.
        """
        length = real.shape[-1]
        draws = torch.rand(length, self.sample_size(length), device=real.device)  # (N, U)
        count = real.sum(-1)  # (B,)
        rank = (draws[None] * count[:, None, None]).long().clamp(max=length - 1)  # (B, N, U)
        real_first = torch.argsort(~real, dim=-1, stable=True)  # (B, N): real positions, in order, first
        return real_first.gather(1, rank.flatten(1)).view_as(rank)

    state_size = staticmethod(every_key_and_value)

    def forward(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        check_inputs(q, k, v, mask)
        real = real_tokens(q, mask)
        return attend_in_float32(self._attend, q, k, v, real, self.sample_keys(real))

    def _attend(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, real: torch.Tensor, sampled: torch.Tensor
    ) -> torch.Tensor:
        """float32 q, k, v (B, H, N, D), real (B, N), sampled key positions (B, N, U) -> (B, H, N, D)."""
        batch, heads, length, dim = q.shape
        count = real.sum(-1)  # (B,)
        with torch.no_grad():
            sparsity = sparsity_measure(q, k, sampled, count.clamp(min=1))  # (B, H, N)
            sparsity = sparsity.masked_fill(~real[:, None, :], -math.inf)
            top = sparsity.topk(self.sample_size(length), dim=-1, sorted=False).indices  # (B, H, u)
        index = top[..., None].expand(-1, -1, -1, dim)  # (B, H, u, D)
        attended = F.scaled_dot_product_attention(
            q.gather(2, index), k, v, attn_mask=key_padding_bias(real, q.dtype)
        )  # (B, H, u, D)
        # the mean of V over real keys: (B, H, 1, D)
        mean_value = zero_padding(v, real).sum(2, keepdim=True) / count.clamp(min=1)[:, None, None, None]
        return mean_value.expand(-1, -1, length, -1).scatter(2, index, attended)


def sparsity_measure(
    q: torch.Tensor, k: torch.Tensor, sampled: torch.Tensor, count: torch.Tensor
) -> torch.Tensor:
    """M = max − sum / count of each query's sampled scores q_i·k_j.

    q, k: (B, H, N, D); sampled: (B, N, U) key positions; count: (B,) -> M (B, H, N).
    For ``SAMPLE_CHUNK`` queries at a time the scores against every key come from one matrix
    product and the sampled ones are picked from them, rather than gathering U keys per query for a
    batch of matrix-vector products, which runs slower on a CPU. Memory O(chunk · N).
    """
    batch, heads, length, _ = q.shape
    measure = torch.empty(batch, heads, length, dtype=q.dtype, device=q.device)
    for start in range(0, length, SAMPLE_CHUNK):
        scores = q[:, :, start : start + SAMPLE_CHUNK] @ k.transpose(-1, -2)  # (B, H, c, N)
        positions = sampled[:, None, start : start + SAMPLE_CHUNK].expand(-1, heads, -1, -1)
        picked = scores.gather(-1, positions)  # (B, H, c, U)
        del scores  # before the next chunk's: one (c × N) buffer at a time, reused by the next
        chunk = measure[..., start : start + SAMPLE_CHUNK]
        torch.sub(picked.amax(-1), picked.sum(-1) / count[:, None, None], out=chunk)
    return measure
