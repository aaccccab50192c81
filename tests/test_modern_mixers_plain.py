"""Each modern mixer equals its layer restated in the smallest plain form: one sequence at a time, its
real tokens only, the projections, gates and norms written out, the recurrence run position after
position (``recurrent_gated_linear_attention``), the backward direction over the sequence reversed
within its own length and averaged with the forward one; Based's attention as its dense (n × n)
Taylor kernel. To 1e-5, on a padded batch, one way and both."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

import attention_zoo
from attention_zoo.parts.gated_chunks import recurrent_gated_linear_attention as recurrence
from attention_zoo.parts.rotary import rotate

DIM = 16
LENGTHS = [50, 29, 1]


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    return x / torch.sqrt(x.square().mean(-1, keepdim=True) + eps) * weight


def both_directions(one_way, tensors: list[torch.Tensor], bidirectional: bool) -> torch.Tensor:
    """one_way over the sequence (n, ...) tensors, and averaged with it over them reversed."""
    forward = one_way(*tensors)
    if not bidirectional:
        return forward
    return (forward + one_way(*(t.flip(0) for t in tensors)).flip(0)) / 2


def heads(x: torch.Tensor, width: int) -> torch.Tensor:
    return x.unflatten(-1, (-1, width))  # (n, H, width)


def projected(mixer, x: torch.Tensor, which: int) -> torch.Tensor:
    """GLA's and RetNet's q, k or v (``which`` 0, 1, 2) of one sequence x (n, dim): the projection, then
    where the layer has one, SiLU of its causal depthwise convolution, each tap written out."""
    u = x @ (mixer.q_proj, mixer.k_proj, mixer.v_proj)[which].weight.T  # (n, width)
    if not len(mixer.convs):
        return u
    weight = mixer.convs[which].weight[:, 0]  # (width, taps): the last tap multiplies position t
    taps = weight.shape[1]
    earlier = [F.pad(u, (0, 0, lag, 0))[: len(u)] for lag in range(taps)]  # u shifted by lag, zeros first
    return F.silu(sum(weight[:, taps - 1 - lag] * shifted for lag, shifted in enumerate(earlier)))


def gated_heads_output(mixer, x: torch.Tensor, q, k, g) -> torch.Tensor:
    """GLA's and RetNet's recurrence per head, norm, swish gate and output, on one sequence x (n, dim)."""
    v = heads(projected(mixer, x, 2), mixer.head_v)

    def one_way(q, k, v, g):
        return recurrence(q[None], k[None], v[None], g[None], mixer.head_k**-0.5)[0]

    o = both_directions(one_way, [q, k, v, g], mixer.directions == 2)  # (n, H, V)
    gate = F.silu(heads(x @ mixer.g_proj.weight.T, mixer.head_v))
    return (rms_norm(o, mixer.g_norm_swish_gate.norm.weight) * gate).flatten(-2) @ mixer.o_proj.weight.T


def gla_plain(mixer, x: torch.Tensor) -> torch.Tensor:
    q, k = (heads(projected(mixer, x, which), mixer.head_k) for which in (0, 1))
    low, full = mixer.gk_proj
    g = heads(F.logsigmoid((x @ low.weight.T) @ full.weight.T + full.bias) / 16, mixer.head_k)
    return gated_heads_output(mixer, x, q, k, g)


def retnet_plain(mixer, x: torch.Tensor) -> torch.Tensor:
    q, k = (heads(projected(mixer, x, which), mixer.head_k) for which in (0, 1))
    positions, pairs = torch.arange(len(x)), mixer.head_k // 2  # an odd width's last dimension unturned
    q, k = (rotate(t.transpose(0, 1)[None], positions, 2 * pairs)[0].transpose(0, 1) for t in (q, k))
    gamma = torch.tensor([1 - 2.0 ** (-5 - h) for h in range(q.shape[1])])  # RetNet §2.2
    return gated_heads_output(mixer, x, q, k, torch.log(gamma).expand(len(x), -1))


def based_plain(mixer, x: torch.Tensor) -> torch.Tensor:
    d = mixer.feature_dim
    q, k = (heads(x @ p.weight.T, d).transpose(0, 1) for p in (mixer.q_proj, mixer.k_proj))  # (H, n, d)
    v = heads(x @ mixer.v_proj.weight.T, mixer.head_v).transpose(0, 1)  # (H, n, V)
    a = q @ k.transpose(-1, -2) / math.sqrt(d)
    kernel = 1 + a + a**2 / 2  # (H, n, n)
    if not mixer.bidirectional:
        kernel = kernel.tril()
    y = kernel @ v / (kernel.sum(-1, keepdim=True) + mixer.eps)
    return y.transpose(0, 1).flatten(-2) @ mixer.o_proj.weight.T


def mamba2_plain(mixer, x: torch.Tensor) -> torch.Tensor:
    z, xBC, dt = (x @ mixer.in_proj.weight.T).split(mixer.widths, dim=-1)

    def one_way(ssd, xBC, dt):
        taps = ssd.conv1d.weight[:, 0]  # (C, width)
        width = taps.shape[1]
        padded = F.pad(xBC, (0, 0, width - 1, 0))
        xBC = F.silu(ssd.conv1d.bias + sum(taps[:, j] * padded[j : j + len(xBC)] for j in range(width)))
        u, B, C = xBC.split([ssd.channels, ssd.d_state, ssd.d_state], dim=-1)
        u = heads(u, ssd.channels // ssd.heads)  # (n, H, P)
        delta = F.softplus(dt + ssd.dt_bias)  # (n, H)
        A = -torch.exp(ssd.A_log)
        state, ys = torch.zeros(ssd.heads, u.shape[-1], ssd.d_state), []
        for t in range(len(u)):  # h_t = exp(Δ A) h + Δ x_t B_tᵀ, y_t = h_t C_t + D x_t
            state = (
                torch.exp(delta[t] * A)[:, None, None] * state + (delta[t, :, None] * u[t])[..., None] * B[t]
            )
            ys.append(state @ C[t] + ssd.D[:, None] * u[t])
        return torch.stack(ys).flatten(-2)

    y = one_way(mixer.directions[0], xBC, dt)
    if len(mixer.directions) == 2:
        y = (y + one_way(mixer.directions[1], xBC.flip(0), dt.flip(0)).flip(0)) / 2
    return rms_norm(y * F.silu(z), mixer.norm.norm.weight) @ mixer.out_proj.weight.T


PLAIN = {"gla": gla_plain, "retnet": retnet_plain, "based": based_plain, "mamba2": mamba2_plain}
CASES = [
    ("gla", {}),
    ("gla", {"bidirectional": False, "chunk_size": 8}),
    ("gla", {"use_short_conv": True}),
    ("gla", {"use_short_conv": True, "conv_size": 3, "bidirectional": False, "chunk_size": 8}),
    ("retnet", {"heads": 4}),
    ("retnet", {"use_short_conv": True, "bidirectional": False, "chunk_size": 16}),
    ("retnet", {"bidirectional": False, "chunk_size": 16}),
    ("retnet", {"key_dim": 24}),  # heads of 3 key dimensions: one pair turned
    ("based", {"heads": 2, "feature_dim": 4}),
    ("based", {"bidirectional": False, "chunk_size": 16}),
    ("mamba2", {"headdim": 8, "d_state": 6}),
    ("mamba2", {"headdim": 16, "bidirectional": False, "chunk_size": 16}),
]


@pytest.mark.parametrize(("name", "options"), CASES, ids=[f"{n}-{o}" for n, o in CASES])
def test_mixer_equals_its_plain_form_with_padding(name, options):
    torch.manual_seed(0)
    mixer = attention_zoo.build_attention(name, dim=DIM, seq_len=64, kernel="torch", **options).eval()
    x = torch.randn(len(LENGTHS), max(LENGTHS), DIM, generator=torch.Generator().manual_seed(1))
    mask = torch.arange(max(LENGTHS))[None, :] < torch.tensor(LENGTHS)[:, None]
    with torch.no_grad():
        out = mixer(x, mask)
        for i, length in enumerate(LENGTHS):
            expected = PLAIN[name](mixer, x[i, :length])
            torch.testing.assert_close(out[i, :length], expected, atol=1e-5, rtol=1e-5)
