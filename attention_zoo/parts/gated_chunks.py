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
chunks. The state is carried across chunks by a loop over the chunks (the sequence length over the
chunk: no loop over positions); backward is autograd's, and what it keeps is linear in the length:
the chunks' products and one (K × V) state per chunk.

Padding: a position with k = 0 (or v = 0) writes nothing and one with g = 0 decays nothing, so a
sequence padded that way carries its state through its padding unchanged (``parts.directions``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from attention_zoo.parts.fla_kernels import Kernel, fla_gated_linear_attention, runs_fla

# positions per chunk on a CPU, by the decay's shape: a vector decay forms (chunk, chunk, K) factors,
# a scalar one (chunk, chunk) (results of the speed check in docs/attentions.md)
CHUNK = {"vector": 16, "scalar": 64, "none": 64}


def decay_kind(g: torch.Tensor | None) -> str:
    """``vector`` for g (B, T, H, K), ``scalar`` for g (B, T, H), ``none`` for no g."""
    return "none" if g is None else "vector" if g.dim() == 4 else "scalar"


def recurrent_gated_linear_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor | None, scale: float
) -> torch.Tensor:
    """The recurrence position after position, in the inputs' dtype (the tests' reference): q, k
    (B, T, H, K), v (B, T, H, V), g as ``gated_linear_attention`` -> o (B, T, H, V)."""
    state = q.new_zeros(q.shape[0], q.shape[2], q.shape[3], v.shape[3])  # (B, H, K, V)
    outputs = []
    for t in range(q.shape[1]):
        if g is not None:
            decay = g[:, t].exp()  # (B, H, K) or (B, H)
            state = state * (decay[..., None] if g.dim() == 4 else decay[..., None, None])
        state = state + k[:, t, :, :, None] * v[:, t, :, None, :]  # k_t v_tᵀ
        outputs.append(scale * torch.einsum("bhk,bhkv->bhv", q[:, t], state))
    return torch.stack(outputs, dim=1)  # (B, T, H, V)


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
    # unbound, not indexed: the gradient of an indexed slice is a zero tensor of the whole, per chunk
    state, entering = torch.zeros_like(added[:, :, 0]), []  # (B, H, K, V)
    decays = [None] * added.shape[2] if carries is None else carries.unbind(2)
    for add, decay in zip(added.unbind(2), decays, strict=True):
        entering.append(state)
        state = (state if decay is None else decay * state) + add
    o = scale * (scores @ v + reads @ torch.stack(entering, dim=2))  # (B, H, N, C, V)
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
    """o_t = scale · q_tᵀ S_t, S_t = diag(exp(g_t)) S_{t-1} + k_t v_tᵀ: q, k (B, T, H, K), v (B, T, H, V),
    g the log decays (≤ 0): (B, T, H, K) per key dimension, (B, T, H) per head, or None -> (B, T, H, V)
    in v's dtype. fla's chunk kernel where ``kernel`` says so for the tensors' device (``name``: the
    mixer, for the refusal's line), else the chunk form in float32, ``chunk`` positions per chunk
    (None: ``CHUNK`` for the decay's shape)."""
    if runs_fla(name, kernel, q.device):
        return fla_gated_linear_attention(q, k, v, g, scale)
    chunk = chunk or CHUNK[decay_kind(g)]
    with torch.autocast(q.device.type, enabled=False):
        tensors = [None if t is None else t.float() for t in (q, k, v, g)]
        return chunked_gated_linear_attention(*tensors, scale, chunk).to(v.dtype)
