"""The delta rule (Schlag, Irie and Schmidhuber 2021; Yang et al. 2024) with an optional scalar decay
per step (Gated DeltaNet: Yang, Kautz and Hatamizadeh 2025), in chunks for training and step by step
for the tests.

Per head, with the state S (K, V) laid out as fla's references lay it (``fla/ops/delta_rule/naive.py``,
``fla/ops/gated_delta_rule/naive.py``):

    S_t = α_t (I − β_t k_t k_tᵀ) S_{t−1} + β_t k_t v_tᵀ,    o_t = S_tᵀ q_t,    S_0 = 0,

with α_t = exp(g_t) (no decay: α_t = 1, DeltaNet). q and k are L2-normalised as fla's kernels do with
``use_qk_l2norm_in_kernel`` (x / sqrt(|x|² + 1e-6)), and q is scaled by K^-1/2. A step with β = 0
and g = 0 leaves the state as it is: the mixers give padded positions both.

The chunk form is the WY representation of Yang et al. 2024 (§3.2, the UT transform), with the decay as
in fla's ``naive_chunk_gated_delta_rule``. In a chunk of C steps, let γ_i = g_1 + ... + g_i (summed
within the chunk) and Γ_ij = exp(γ_i − γ_j) for j ≤ i, 0 above. The chunk's C rank-one updates fold
into one unit lower-triangular solve:

    T = (I + strictly_lower(diag(β) K Kᵀ ⊙ Γ))⁻¹,   W = T diag(β e^γ) K,   U = T diag(β) V;

from the entering state S the chunk's new values are U − W S, its outputs
(Q ⊙ e^γ − P W) S + P U with P = lower(Q Kᵀ ⊙ Γ), and it leaves the state M S + B with
M = e^{γ_C} I − (K ⊙ e^{γ_C − γ})ᵀ W and B = (K ⊙ e^{γ_C − γ})ᵀ U. Everything but the states runs
over all chunks at once; the states S_{n+1} = M_n S_n + B_n take about 2√N small steps
(``entering_states``). What autograd keeps is the (C, C) blocks and one (K, V) state per chunk: linear
in the length. Every exponent is of a difference γ_i − γ_j ≤ 0 within a chunk, so nothing overflows.

``delta_rule`` runs that form or fla's chunk kernel, by the ``kernel`` option (``parts.fla_kernels``):
``chunk_delta_rule`` without a decay, ``chunk_gated_delta_rule`` with one, q and k normalised in the
kernel (``use_qk_l2norm_in_kernel``, as fla's layers call them). fla's ``chunk_delta_rule`` refuses
float32 inputs, so without a decay in float32 the gated kernel runs with a zero decay: the same
recurrence, in the inputs' precision.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from attention_zoo.parts.fla_kernels import Kernel, fla_function, runs_fla

CHUNK = 64  # steps per chunk: fla's chunk size (memory and speed, not results)
EPS = 1e-6  # fla's l2norm


def l2_normalised(x: torch.Tensor) -> torch.Tensor:
    """x / sqrt(|x|² + 1e-6) over the last dim, as fla's ``l2norm``."""
    return x * torch.rsqrt(x.square().sum(-1, keepdim=True) + EPS)


def prepared(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, beta: torch.Tensor, log_decay: torch.Tensor | None
) -> tuple[torch.Tensor, ...]:
    """Heads first in float32, q and k normalised, q scaled: (B, L, H, D) -> (B, H, L, D), (B, L, H)
    -> (B, H, L); no decay: None."""
    q, k, v = (t.float().transpose(1, 2) for t in (q, k, v))
    q, k = l2_normalised(q) * q.shape[-1] ** -0.5, l2_normalised(k)
    beta = beta.float().transpose(1, 2)
    g = None if log_decay is None else log_decay.float().transpose(1, 2)
    return q, k, v, beta, g


def entering_states(m: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The state entering each chunk, S_0 = 0 and S_{n+1} = M_n S_n + B_n: m (..., N, K, K), b (..., N, K, V)
    -> (..., N, K, V). The chunks go in G groups of s ≈ √N: a loop over the s positions of every group at
    once gives each chunk's state from a zero state at its group's start and the product of its group's
    maps before it; a loop over the groups gives the state entering each group; one product adds it. So
    about 2√N small steps replace N, for N·K²(K + V) more multiplications. Position in the group first,
    so that each step's maps are one contiguous batch."""
    *lead, chunks, width, values = b.shape
    size = math.isqrt(chunks - 1) + 1  # s = ⌈√N⌉ chunks per group
    groups = -(-chunks // size)
    pad = groups * size - chunks  # identity maps after the last chunk
    eye = torch.eye(width, dtype=m.dtype, device=m.device)
    m, b = m.flatten(0, -4), b.flatten(0, -4)  # (X, N, K, ·)
    m = torch.cat([m, eye.expand(len(m), pad, width, width)], dim=1)  # (X, G·s, K, K)
    b = F.pad(b, (0, 0, 0, 0, 0, pad))  # (X, G·s, K, V)
    step_first = (t.unflatten(1, (groups, size)).movedim(2, 0).flatten(1, 2) for t in (m, b))
    m, b = (t.contiguous() for t in step_first)  # (s, X·G, K, ·)
    products, states = [eye.expand_as(m[0]), m[0]], [torch.zeros_like(b[0]), b[0]]  # before chunk j, after
    for j in range(1, size):
        states.append(torch.baddbmm(b[j], m[j], states[-1]))
        products.append(torch.bmm(m[j], products[-1]))
    ends = [t[-1].unflatten(0, (-1, groups)) for t in (products, states)]  # each group's: (X, G, K, ·)
    entering = [torch.zeros_like(ends[1][:, 0])]  # the state entering each group: (X, K, V)
    for group in range(groups - 1):
        entering.append(torch.baddbmm(ends[1][:, group], ends[0][:, group], entering[-1]))
    first = torch.stack(entering, dim=1).flatten(0, 1)  # (X·G, K, V)
    within = torch.stack(products[:-1]) @ first + torch.stack(states[:-1])  # (s, X·G, K, V)
    within = within.unflatten(1, (-1, groups)).movedim(0, 2).flatten(1, 2)  # (X, G·s, K, V)
    return within[:, :chunks].reshape(*lead, chunks, width, values)


def chunked_delta_rule(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    beta: torch.Tensor,
    log_decay: torch.Tensor | None = None,
    chunk: int = CHUNK,
) -> torch.Tensor:
    """The delta rule's outputs in chunks (module docstring), in float32.

    q, k: (B, L, H, K), v: (B, L, H, V), beta and log_decay g (≤ 0, None: no decay): (B, L, H) ->
    o (B, L, H, V), fla's kernel layout.
    """
    with torch.autocast(q.device.type, enabled=False):
        q, k, v, beta, g = prepared(q, k, v, beta, log_decay)
        length = q.shape[2]
        chunk = min(chunk, length)
        pad = -length % chunk  # steps of β = 0, g = 0 after the end change no earlier output
        q, k, v = (F.pad(t, (0, 0, 0, pad)).unflatten(2, (-1, chunk)) for t in (q, k, v))  # (B, H, N, C, D)
        beta = F.pad(beta, (0, pad)).unflatten(2, (-1, chunk))[..., None]  # (B, H, N, C, 1)
        k_beta = k * beta  # (B, H, N, C, K)
        tied = k_beta @ k.transpose(-1, -2)  # diag(β) K Kᵀ: the solve reads below its diagonal only
        scores = q @ k.transpose(-1, -2)  # Q Kᵀ: (B, H, N, C, C)
        upper = torch.ones(chunk, chunk, dtype=torch.bool, device=q.device).triu(1)
        if g is None:  # Γ is 1 on and below the diagonal
            scores = scores.masked_fill(upper, 0.0)  # P
            q_in, k_in, k_out, carried = q, k_beta, k, None
        else:
            gamma = F.pad(g, (0, pad)).unflatten(2, (-1, chunk)).cumsum(-1)[..., None]  # (B, H, N, C, 1)
            lags = (gamma - gamma.transpose(-1, -2)).masked_fill(upper, -torch.inf)  # γ_i − γ_j
            decay = lags.exp()  # Γ: (B, H, N, C, C)
            tied, scores = tied * decay, scores * decay  # P zero above the diagonal
            q_in, k_in = q * gamma.exp(), k_beta * gamma.exp()  # Q ⊙ e^γ, diag(β e^γ) K
            k_out, carried = k * (gamma[..., -1:, :] - gamma).exp(), gamma[..., -1, :].exp()  # e^{γ_C}
        weighted = torch.cat([k_in, v * beta], dim=-1)  # (B, H, N, C, K + V)
        wu = torch.linalg.solve_triangular(tied, weighted, upper=False, unitriangular=True)
        w, u = wu.split([k.shape[-1], v.shape[-1]], dim=-1)  # W, U
        m = -(k_out.transpose(-1, -2) @ w)  # M − e^{γ_C} I: (B, H, N, K, K)
        m.diagonal(dim1=-2, dim2=-1).add_(1.0 if carried is None else carried)
        b = k_out.transpose(-1, -2) @ u  # B: (B, H, N, K, V)
        s = entering_states(m, b)  # (B, H, N, K, V)
        o = (q_in - scores @ w) @ s + scores @ u  # (B, H, N, C, V)
        return o.flatten(2, 3)[:, :, :length].transpose(1, 2)  # (B, L, H, V)


def fla_delta_rule(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, beta: torch.Tensor, log_decay: torch.Tensor | None
) -> torch.Tensor:
    """fla's chunk kernel of the delta rule (module docstring): shapes as ``chunked_delta_rule``, the
    output in v's dtype."""
    q, k, v = (t.contiguous() for t in (q, k, v))
    beta = beta.to(q.dtype).contiguous()
    if log_decay is None and q.dtype != torch.float32:
        out, _ = fla_function("delta_rule", "chunk_delta_rule")(q, k, v, beta, use_qk_l2norm_in_kernel=True)
        return out
    g = beta.new_zeros(beta.shape, dtype=torch.float32) if log_decay is None else log_decay.float()
    run = fla_function("gated_delta_rule", "chunk_gated_delta_rule")
    out, _ = run(q, k, v, g.contiguous(), beta, use_qk_l2norm_in_kernel=True)
    return out


def delta_rule(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    beta: torch.Tensor,
    log_decay: torch.Tensor | None,
    *,
    name: str,
    kernel: Kernel,
    chunk: int | None = None,
) -> torch.Tensor:
    """The delta rule of the mixer ``name`` by fla's kernel or the chunk form here, as ``kernel`` says
    (``runs_fla``); ``chunk`` None: ``CHUNK``. Shapes as ``chunked_delta_rule``."""
    if runs_fla(name, kernel, q.device):
        return fla_delta_rule(q, k, v, beta, log_decay)
    return chunked_delta_rule(q, k, v, beta, log_decay, chunk or CHUNK)


def recurrent_delta_rule(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    beta: torch.Tensor,
    log_decay: torch.Tensor | None = None,
) -> torch.Tensor:
    """The delta rule step by step (the recurrence of the module docstring), for the tests: shapes as
    ``chunked_delta_rule``."""
    with torch.autocast(q.device.type, enabled=False):
        q, k, v, beta, g = prepared(q, k, v, beta, log_decay)
        state = q.new_zeros(*q.shape[:2], q.shape[-1], v.shape[-1])  # S: (B, H, K, V)
        outputs = []
        for t in range(q.shape[2]):
            if g is not None:
                state = state * g[:, :, t, None, None].exp()
            k_t = k[:, :, t]  # (B, H, K)
            error = v[:, :, t] - (k_t[..., None] * state).sum(-2)  # v_t − Sᵀ k_t: (B, H, V)
            state = state + k_t[..., None] * (beta[:, :, t, None] * error)[..., None, :]
            outputs.append((q[:, :, t, :, None] * state).sum(-2))  # Sᵀ q_t: (B, H, V)
        return torch.stack(outputs, dim=1)  # (B, L, H, V)
