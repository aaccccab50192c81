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
over all chunks at once; the states S_{n+1} = M_n S_n + B_n take one small product per chunk. What
autograd keeps is the (C, C) blocks and one (K, V) state per chunk: linear in the length. Every
exponent is of a difference γ_i − γ_j ≤ 0 within a chunk, so nothing overflows.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

# Steps per chunk: fla's chunk size, and on a CPU the one whose layer forward+backward is fastest at
# the lengths of the efficiency benchmark (docs/attentions.md § deltanet).
CHUNK = 64
EPS = 1e-6  # fla's l2norm


def l2_normalised(x: torch.Tensor) -> torch.Tensor:
    """x / sqrt(|x|² + 1e-6) over the last dim, as fla's ``l2norm``."""
    return x * torch.rsqrt(x.square().sum(-1, keepdim=True) + EPS)


def prepared(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, beta: torch.Tensor, log_decay: torch.Tensor | None
) -> tuple[torch.Tensor, ...]:
    """Heads first in float32, q and k normalised, q scaled: (B, L, H, D) -> (B, H, L, D), (B, L, H)
    -> (B, H, L); no decay: zeros."""
    q, k, v = (t.float().transpose(1, 2) for t in (q, k, v))
    q, k = l2_normalised(q) * q.shape[-1] ** -0.5, l2_normalised(k)
    beta = beta.float().transpose(1, 2)
    g = torch.zeros_like(beta) if log_decay is None else log_decay.float().transpose(1, 2)
    return q, k, v, beta, g


def entering_states(m: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The state entering each chunk, S_0 = 0 and S_{n+1} = M_n S_n + B_n: m (..., N, K, K), b (..., N, K, V)
    -> (..., N, K, V). A Hillis–Steele scan over the chunks: in round r every chunk composes its map
    with the one 2^r chunks before it, so log2 N rounds of batched products replace N small steps."""
    chunks, shift = b.shape[-3], 1
    while shift < chunks:
        later = m[..., shift:, :, :]  # (..., N − shift, K, K)
        b = torch.cat([b[..., :shift, :, :], later @ b[..., :-shift, :, :] + b[..., shift:, :, :]], dim=-3)
        if 2 * shift < chunks:
            m = torch.cat([m[..., :shift, :, :], later @ m[..., :-shift, :, :]], dim=-3)
        shift *= 2
    return torch.cat([torch.zeros_like(b[..., :1, :, :]), b[..., :-1, :, :]], dim=-3)  # S_n


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
        beta, g = (F.pad(t, (0, pad)).unflatten(2, (-1, chunk)) for t in (beta, g))  # (B, H, N, C)
        gamma = g.cumsum(-1)  # (B, H, N, C)
        upper = torch.ones(chunk, chunk, dtype=torch.bool, device=q.device).triu(1)
        lags = (gamma[..., :, None] - gamma[..., None, :]).masked_fill(upper, -torch.inf)  # γ_i − γ_j
        decay = lags.exp()  # Γ: (B, H, N, C, C)
        tied = (k @ k.transpose(-1, -2) * decay * beta[..., None]).tril(-1)  # (B, H, N, C, C)
        scores = q @ k.transpose(-1, -2) * decay  # P: (B, H, N, C, C), zero above the diagonal
        weighted = torch.cat([k * (beta * gamma.exp())[..., None], v * beta[..., None]], dim=-1)
        wu = torch.linalg.solve_triangular(tied, weighted, upper=False, unitriangular=True)  # C × (K + V)
        w, u = wu.split([k.shape[-1], v.shape[-1]], dim=-1)  # W, U
        k_out = k * (gamma[..., -1:] - gamma).exp()[..., None]  # K ⊙ e^{γ_C − γ}: (B, H, N, C, K)
        eye = torch.eye(k.shape[-1], device=q.device)
        m = gamma[..., -1, None, None].exp() * eye - k_out.transpose(-1, -2) @ w  # M: (B, H, N, K, K)
        b = k_out.transpose(-1, -2) @ u  # B: (B, H, N, K, V)
        s = entering_states(m, b)  # (B, H, N, K, V)
        o = (q * gamma.exp()[..., None] - scores @ w) @ s + scores @ u  # (B, H, N, C, V)
        return o.flatten(2, 3)[:, :, :length].transpose(1, 2)  # (B, L, H, V)


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
            state = state * g[:, :, t, None, None].exp()
            k_t = k[:, :, t]  # (B, H, K)
            error = v[:, :, t] - (k_t[..., None] * state).sum(-2)  # v_t − Sᵀ k_t: (B, H, V)
            state = state + k_t[..., None] * (beta[:, :, t, None] * error)[..., None, :]
            outputs.append((q[:, :, t, :, None] * state).sum(-2))  # Sᵀ q_t: (B, H, V)
        return torch.stack(outputs, dim=1)  # (B, L, H, V)
