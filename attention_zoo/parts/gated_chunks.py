"""Gated linear attention: o_t = scale · q_tᵀ S_t with S_t = diag(exp(g_t)) S_{t-1} + k_t v_tᵀ, S_{-1} = 0,
in the chunk-parallel form that trains (memory linear in the length) and the step-by-step form it is
tested against. One recurrence serves four mixers through the shape of its log decay g:

- a vector g (B, T, H, K), one decay per key dimension: GLA (Yang et al. 2024);
- a scalar g (B, T, H), one decay per head: RetNet's fixed γ_h (Sun et al. 2023), Mamba-2's A·Δ_t
  (Dao and Gu 2024, the SSD form: q = C, k = B, v = Δ·x);
- no g: plain linear attention, Based's (Arora et al. 2024), whose normaliser is one more value column.

The chunk form (GLA §3, the SSD algorithm of Mamba-2 §6) cuts the sequence into chunks of ``chunk``
positions. With b_t the cumulative log decay within its chunk (b ≤ 0, decreasing): inside a chunk,
o_t = Σ_{s ≤ t} (q_t ⊙ exp(b_t − b_s))·k_s v_s, a masked (chunk × chunk) product per head; across
chunks, each chunk adds (k_s ⊙ exp(b_last − b_s)) v_sᵀ to the state it was handed, decayed by
exp(b_last), and each position reads the state it entered with through q_t ⊙ exp(b_t). Every exponent
is of a difference b_t − b_s with s ≤ t, never positive, so no factor exceeds 1 whatever the decay (the
factorisation q ⊙ exp(b), k ⊙ exp(−b) of the GLA paper overflows once a chunk's decay passes e^−88).
A vector decay forms those factors per key dimension, (chunk × chunk × K) per chunk, hence its shorter
chunks. The states entering the chunks obey h_n = exp(b_last) ⊙ h_{n-1} + (what chunk n adds), which
Mamba's ``BlockScan`` (``parts.scan``) solves in place, blocks of chunks side by side, with its own
backward (``ChunkStates``); the rest is autograd's. What backward keeps is linear in the length: the
chunks' (chunk × chunk) products and one (K × V) state per chunk. One q and k may serve every head of
v (q, k (B, T, 1, K)): Mamba-2's one group, whose (chunk × chunk) products of C and B are then formed
once for all heads.

Padding: a position with k = 0 (or v = 0) writes nothing and one with g = 0 decays nothing, so a
sequence padded that way carries its state through its padding unchanged (``parts.directions``).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch.autograd.function import FunctionCtx, once_differentiable

from attention_zoo.parts.fla_kernels import Kernel, fla_gated_linear_attention, runs_fla
from attention_zoo.parts.scan import BLOCK, BlockScan

# positions per chunk by default, the fastest of the powers of two tried for each mixer's layer at
# 4,096 tokens on a CPU (one torch thread): a vector decay forms (chunk, chunk, K) factors, the most
# expensive part of its form, in short chunks; a scalar decay, or none, forms (chunk, chunk) products
# within chunks and (K, V) states between them, balanced at chunk ≈ √(K·V)
VECTOR_CHUNK = 8
CHUNK_RANGE = (16, 128)


def default_chunk(q: torch.Tensor, v: torch.Tensor, g: torch.Tensor | None) -> int:
    """``VECTOR_CHUNK`` for a vector decay; else the power of two nearest √(K·V) within ``CHUNK_RANGE``."""
    if g is not None and g.dim() == 4:
        return VECTOR_CHUNK
    power = 2 ** round(math.log2(q.shape[-1] * v.shape[-1]) / 2)
    return min(max(power, CHUNK_RANGE[0]), CHUNK_RANGE[1])


def recurrent_gated_linear_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor | None, scale: float
) -> torch.Tensor:
    """The recurrence position after position, in the inputs' dtype (the tests' reference): shapes as
    ``gated_linear_attention``."""
    state = q.new_zeros(v.shape[0], v.shape[2], q.shape[3], v.shape[3])  # (B, H, K, V)
    outputs = []
    for t in range(q.shape[1]):
        if g is not None:
            decay = g[:, t].exp()  # (B, H, K) or (B, H)
            state = state * (decay[..., None] if g.dim() == 4 else decay[..., None, None])
        state = state + k[:, t, :, :, None] * v[:, t, :, None, :]  # k_t v_tᵀ
        outputs.append(scale * (q[:, t, :, :, None] * state).sum(-2))  # q_tᵀ S_t
    return torch.stack(outputs, dim=1)  # (B, T, H, V)


class ChunkStates(torch.autograd.Function):
    """The state entering each chunk: with h_n = a_n ⊙ h_{n-1} + b_n and h_{-1} = 0, the states
    (0, h_0, …, h_{N-2}): a, b (N, ...) of one shape -> (N, ...). Solved in place by Mamba's
    ``BlockScan`` (blocks of positions side by side, no loop over the chunks); backward is the
    recurrence's own, G_n = a_{n+1} G_{n+1} + ∂/∂h_n, one reverse scan, and keeps a and the states."""

    @staticmethod
    def forward(ctx: FunctionCtx, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        count, pad = a.shape[0], -a.shape[0] % BLOCK
        a = torch.cat([a, a.new_ones(pad, *a.shape[1:])])  # identity steps fill the last block
        h = torch.cat([b, b.new_zeros(pad, *b.shape[1:])])
        BlockScan(a, h, torch.empty_like(a))(None)
        entering = torch.cat([torch.zeros_like(h[:1]), h[: count - 1]])  # (N, ...)
        ctx.save_for_backward(a, entering)
        return entering

    @staticmethod
    @once_differentiable
    def backward(ctx: FunctionCtx, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        a, entering = ctx.saved_tensors
        count = entering.shape[0]
        g = torch.zeros_like(a)  # ∂/∂h_n: what reaches h_n from the chunks after it (none after the last)
        g[: count - 1] = grad[1:]
        BlockScan(torch.cat([a[1:], a[:1]]), g, torch.empty_like(a), reverse=True)(None)
        return (g[:count] * entering), g[:count]


def in_chunks(t: torch.Tensor, chunk: int) -> torch.Tensor:
    """(B, T, H, ...) -> (B, H, N, chunk, ...), zero-padded to N·chunk positions."""
    pad = -t.shape[1] % chunk
    t = F.pad(t, (0, 0) * (t.dim() - 2) + (0, pad))  # (B, T + pad, H, ...)
    return t.transpose(1, 2).unflatten(2, (-1, chunk))


def intra_chunk_scores(q: torch.Tensor, k: torch.Tensor, b: torch.Tensor | None) -> torch.Tensor:
    """Σ_k q_t k_s exp(b_t − b_s) for s ≤ t, 0 for s > t: q, k (..., C, K), b (..., C, K), (..., C) or
    None -> (..., C, C)."""
    chunk = q.shape[-2]
    later = torch.ones(chunk, chunk, dtype=torch.bool, device=q.device).triu(1)  # s > t
    if b is None:
        return (q @ k.transpose(-1, -2)).masked_fill(later, 0.0)
    if b.dim() == q.dim():  # vector: the factors per key dimension, (..., C, C, K)
        factors = (b[..., :, None, :] - b[..., None, :, :]).masked_fill(later[..., None], -torch.inf).exp()
        return ((q[..., :, None, :] * factors) * k[..., None, :, :]).sum(-1)
    factors = (b[..., :, None] - b[..., None, :]).masked_fill(later, -torch.inf).exp()  # (..., C, C)
    return (q @ k.transpose(-1, -2)) * factors


def chunked_gated_linear_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor | None, scale: float, chunk: int
) -> torch.Tensor:
    """The chunk form (module docstring) in the inputs' dtype: shapes as ``gated_linear_attention``."""
    length = q.shape[1]
    q, k, v = (in_chunks(t, chunk) for t in (q, k, v))  # (B, H, N, C, K|V)
    b = None if g is None else in_chunks(g, chunk).cumsum(3)  # (B, H, N, C[, K]): 0 in the padding
    scores = intra_chunk_scores(q, k, b)  # (B, H, N, C, C)
    if b is None:
        reads, writes, carries = q, k, None
    else:
        bv = b if b.dim() == q.dim() else b[..., None]  # (B, H, N, C, K or 1)
        reads = q * bv.exp()  # q_t ⊙ exp(b_t)
        writes = k * (bv[..., -1:, :] - bv).exp()  # k_s ⊙ exp(b_last − b_s)
        carries = bv[..., -1, :].exp()[..., None]  # exp(b_last): (B, H, N, K or 1, 1)
    added = writes.transpose(-1, -2) @ v  # (B, H, N, K, V)
    if carries is None:
        entering = added.cumsum(2) - added  # the sum of the chunks before each
    else:
        decays = carries.expand_as(added).movedim(2, 0).contiguous()  # (N, B, H, K, V)
        entering = ChunkStates.apply(decays, added.movedim(2, 0).contiguous()).movedim(0, 2)
    o = scale * (scores @ v + reads @ entering)  # (B, H, N, C, V)
    return o.flatten(2, 3)[:, :, :length].transpose(1, 2)  # (B, T, H, V)


def gated_linear_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor | None,
    scale: float,
    *,
    name: str,
    kernel: Kernel = "auto",
    chunk: int | None = None,
) -> torch.Tensor:
    """o_t = scale · q_tᵀ S_t, S_t = diag(exp(g_t)) S_{t-1} + k_t v_tᵀ: q, k (B, T, H, K) or (B, T, 1, K)
    (one query and key for every head, Mamba-2's one group), v (B, T, H, V), g the log decays (≤ 0):
    (B, T, H, K) per key dimension, (B, T, H) per head, or None -> (B, T, H, V)
    in v's dtype. fla's chunk kernel where ``kernel`` says so for the tensors' device (``name``: the
    mixer, for the refusal's line), else the chunk form in float32, ``chunk`` positions per chunk
    (None: ``CHUNK`` for the decay's shape)."""
    if runs_fla(name, kernel, q.device):
        return fla_gated_linear_attention(q, k, v, g, scale)
    chunk = chunk or default_chunk(q, v, g)
    with torch.autocast(q.device.type, enabled=False):
        tensors = [None if t is None else t.float() for t in (q, k, v, g)]
        return chunked_gated_linear_attention(*tensors, scale, chunk).to(v.dtype)
