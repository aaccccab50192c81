"""The modern mixers' cores against fla's pure-PyTorch references (flash-linear-attention 0.6.0,
``fla.ops.<op>.naive``), causal, on a padded batch: each sequence's real positions equal the reference
run on that sequence alone, outputs and gradients, within 1e-5 relative in float32. Mamba-2's whole
one-directional layer is checked against fla's own PyTorch form of its layer too.

The references' traps (issue 54): GLA's and simple GLA's take [B, T, H, D], retention's and Based's
[B, H, T, D]; ``naive_recurrent_gla`` fixes its scale at K^-½ (the layer's); ``naive_retention`` draws
its decays from its number of heads; ``naive_parallel_based`` adds 1e-6 to its normaliser.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import attention_zoo
from attention_zoo.parts.directions import both_ways

pytest.importorskip("fla.ops", reason='fla is not installed: pip install -e ".[fla]"')
from fla.ops.based.naive import naive_parallel_based  # noqa: E402
from fla.ops.gla.naive import naive_recurrent_gla  # noqa: E402
from fla.ops.retention.naive import naive_retention  # noqa: E402
from fla.ops.simple_gla.naive import naive_recurrent_simple_gla  # noqa: E402

LENGTHS = [45, 30, 1]  # a padded batch: full, padded, a single real token
SEQ, DIM = 45, 16


def mask_of(lengths: list[int], seq: int = SEQ) -> torch.Tensor:
    return torch.arange(seq)[None, :] < torch.tensor(lengths)[:, None]


def randn(*shape: int, seed: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).requires_grad_(True)


def relative_error(got: torch.Tensor, expected: torch.Tensor) -> float:
    return ((got - expected).norm() / expected.norm()).item()


def check_against_reference(ours, reference, inputs: list[torch.Tensor], time_axes: list[int]) -> float:
    """``ours(*inputs, mask)`` on the padded batch against ``reference(*one sequence's inputs)`` for
    each sequence: the outputs, and the gradients of a random weighting of the real outputs, each
    within 1e-5 of the largest sequence's norm (a single token's gradients to q and k are rounding
    noise about 0), and none at padded positions. ``time_axes``: each input's sequence axis, the first
    the output's. Returns the largest relative error."""
    mask = mask_of(LENGTHS)
    out = ours(*inputs, mask)
    weights = torch.randn(out.shape, generator=torch.Generator().manual_seed(9))
    axis = time_axes[0]
    real = mask.view(mask.shape[0], *(1,) * (axis - 1), mask.shape[1], *(1,) * (out.dim() - axis - 1))
    grads = torch.autograd.grad((out * weights * real).sum(), inputs)
    errors, norms = [[] for _ in range(len(inputs) + 1)], [[] for _ in range(len(inputs) + 1)]
    for i, length in enumerate(LENGTHS):
        one = [
            t[i : i + 1].detach().narrow(a, 0, length).requires_grad_(True)
            for t, a in zip(inputs, time_axes, strict=True)
        ]
        expected = reference(*one)
        expected_grads = torch.autograd.grad(
            (expected * weights[i : i + 1].narrow(axis, 0, length)).sum(), one
        )
        got = [out[i : i + 1].narrow(axis, 0, length)]
        got += [grad[i : i + 1].narrow(a, 0, length) for grad, a in zip(grads, time_axes, strict=True)]
        for j, (x, y) in enumerate(zip(got, [expected, *expected_grads], strict=True)):
            errors[j].append((x - y).norm().item())
            norms[j].append(y.norm().item())
        for grad, a in zip(grads, time_axes, strict=True):
            assert grad[i].narrow(a - 1, length, grad.shape[a] - length).abs().sum() == 0  # padding: none
    worst = max(max(e) / max(n) for e, n in zip(errors, norms, strict=True))
    assert worst < 1e-5, worst
    return worst


def build(name: str, **options) -> torch.nn.Module:
    torch.manual_seed(0)
    return attention_zoo.build_attention(
        name, dim=DIM, seq_len=SEQ, causal=True, bidirectional=False, kernel="torch", **options
    )


@pytest.mark.parametrize("chunk_size", [None, 8])
def test_gla_core_equals_flas_recurrent_gla(chunk_size):
    mixer = build("gla", chunk_size=chunk_size)
    B, H, K, V = len(LENGTHS), 4, mixer.head_k, mixer.head_v
    q, k, g = randn(B, SEQ, H, K, seed=1), randn(B, SEQ, H, K, seed=2), randn(B, SEQ, H, K, seed=3)
    v = randn(B, SEQ, H, V, seed=4)
    decays = lambda g: F.logsigmoid(g) / 4  # noqa: E731  (a decay that forgets within a few steps)
    ours = lambda q, k, v, g, mask: both_ways([mixer.attend], [q, k, v, decays(g)], mask)  # noqa: E731
    reference = lambda q, k, v, g: naive_recurrent_gla(q, k, v, decays(g))[0]  # noqa: E731
    check_against_reference(ours, reference, [q, k, v, g], [1, 1, 1, 1])


@pytest.mark.parametrize("chunk_size", [None, 8])
def test_retnet_core_equals_flas_retention(chunk_size):
    mixer = build("retnet", chunk_size=chunk_size)
    B, H, K, V = len(LENGTHS), 8, mixer.head_k, mixer.head_v
    q, k, v = randn(B, H, SEQ, K, seed=1), randn(B, H, SEQ, K, seed=2), randn(B, H, SEQ, V, seed=3)

    def ours(q, k, v, mask):  # the retention's layout is [B, H, T, D], the layer's [B, T, H, D]
        decays = mixer.log_decays.expand(B, SEQ, -1)  # (B, T, H)
        tokens = [t.transpose(1, 2) for t in (q, k, v)]
        return both_ways([mixer.attend], [*tokens, decays], mask).transpose(1, 2)

    check_against_reference(ours, naive_retention, [q, k, v], [2, 2, 2])


@pytest.mark.parametrize("chunk_size", [None, 8])
def test_based_core_equals_flas_parallel_based(chunk_size):
    mixer = build("based", chunk_size=chunk_size, eps=1e-6, heads=2)  # the reference's 1e-6
    B, H, F_, V = len(LENGTHS), 2, mixer.feature_dim, mixer.head_v
    q, k, v = randn(B, H, SEQ, F_, seed=1), randn(B, H, SEQ, F_, seed=2), randn(B, H, SEQ, V, seed=3)

    def ours(q, k, v, mask):  # the reference's layout is [B, H, T, D], the layer's [B, T, H, D]
        return mixer.attend(*(t.transpose(1, 2) for t in (q, k, v)), mask).transpose(1, 2)

    check_against_reference(ours, naive_parallel_based, [q, k, v], [2, 2, 2])


@pytest.mark.parametrize("chunk_size", [None, 8])
def test_mamba2_ssd_equals_flas_recurrent_simple_gla(chunk_size):
    """SSD with one group is simple GLA with q = C, k = B, v = Δ·x, g = Δ·A and no scale."""
    ssd = build("mamba2", chunk_size=chunk_size, headdim=8, d_state=6).directions[0]
    B, H, P, N = len(LENGTHS), 4, 8, 6
    x, Bs, Cs = randn(B, SEQ, H, P, seed=1), randn(B, SEQ, N, seed=2), randn(B, SEQ, N, seed=3)
    raw = randn(B, SEQ, H, seed=4)
    ours = lambda x, Bs, Cs, raw, mask: both_ways([ssd.ssd], [x, Bs, Cs, F.softplus(raw)], mask)  # noqa: E731

    def reference(x, Bs, Cs, raw):
        delta, heads = F.softplus(raw), (-1, -1, H, -1)
        g = -torch.exp(ssd.A_log) * delta
        q, k = Cs[:, :, None].expand(heads), Bs[:, :, None].expand(heads)
        return naive_recurrent_simple_gla(q, k, x * delta[..., None], g, scale=1.0)[0]

    check_against_reference(ours, reference, [x, Bs, Cs, raw], [1, 1, 1, 1])


def test_mamba2_one_way_is_flas_mamba2_layer_in_pytorch():
    """fla's ``Mamba2.torch_forward`` (its chunked PyTorch SSD) with our weights, on a padded batch.
    Its SiLU and gated norm launch Triton kernels, which need a GPU: they are replaced by torch's SiLU
    and fla's own PyTorch reference of the norm (``rms_norm_ref``)."""
    from fla.layers.mamba2 import Mamba2
    from fla.modules.norm.layernorm_gated import rms_norm_ref

    ours = build("mamba2", headdim=8, d_state=6)
    theirs = Mamba2(hidden_size=DIM, head_dim=8, state_size=6, expand=2, n_groups=1, chunk_size=16)
    ssd = ours.directions[0]
    with torch.no_grad():
        for mine, flas in [
            (ours.in_proj.weight, theirs.in_proj.weight),  # both [z, xBC, dt]
            (ssd.conv1d.weight, theirs.conv1d.weight),
            (ssd.conv1d.bias, theirs.conv1d.bias),
            (ssd.dt_bias, theirs.dt_bias),
            (ssd.A_log, theirs.A_log),
            (ssd.D, theirs.D),
            (ours.norm.norm.weight, theirs.norm.weight),
            (ours.out_proj.weight, theirs.out_proj.weight),
        ]:
            flas.copy_(mine)
    theirs.act = F.silu
    norm = theirs.norm
    norm.forward = lambda y, z: rms_norm_ref(y, norm.weight, None, z, norm.eps, norm.group_size, False)
    mask = mask_of(LENGTHS)
    x = randn(len(LENGTHS), SEQ, DIM, seed=5)
    weights = torch.randn(x.shape, generator=torch.Generator().manual_seed(9)) * mask[..., None]
    outputs, grads = [], []
    for layer in (ours, lambda x, mask: theirs(x, attention_mask=mask)[0]):
        out = layer(x, mask) * mask[..., None]
        outputs.append(out)
        grads.append(torch.autograd.grad((out * weights).sum(), x)[0])
    assert relative_error(outputs[0], outputs[1]) < 1e-5
    assert relative_error(grads[0], grads[1]) < 1e-5
