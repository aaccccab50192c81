"""The exact cores: ``kernelized`` through scaled_dot_product_attention against its quadratic formula,
both exact cores on the CPU's fused kernel, and their ``attention_dropout``.
"""

from __future__ import annotations

import pytest
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

import attention_zoo
from attention_zoo.cores.kernelized import gaussian_kernel
from attention_zoo.parts.masking import zero_padding

HEADS, HEAD_DIM = 2, 16
EXACT = ("standard", "kernelized")


def make_inputs(lengths: list[int], seq: int, seed: int = 0, scale: float = 1.0, dim: int = HEAD_DIM):
    gen = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(len(lengths), HEADS, seq, dim, generator=gen) for _ in range(3))
    mask = torch.arange(seq)[None, :] < torch.tensor(lengths)[:, None]
    return q * scale, k * scale, v, mask


def core(name: str, seq: int, dim: int = HEAD_DIM, **options):
    return attention_zoo.build_attention(name, head_dim=dim, num_heads=HEADS, seq_len=seq, **options)


def quadratic_kernelized(q, k, v, mask):
    """The quadratic formula ``kernelized`` used before it ran through SDPA: κ(Q̂, K̂) built in full,
    padded keys zeroed, then multiplied by V (float32)."""
    scale = q.shape[-1] ** -0.25
    kernel = gaussian_kernel(zero_padding(q, mask) * scale, zero_padding(k, mask) * scale)
    return (kernel * mask[:, None, None, :]) @ zero_padding(v, mask)


def relative_error(approx: torch.Tensor, exact: torch.Tensor) -> float:
    """Largest Frobenius relative error over the (batch, head) matrices."""
    return ((approx - exact).norm(dim=(-2, -1)) / exact.norm(dim=(-2, -1)).clamp_min(1e-30)).max().item()


# --- kernelized through SDPA ---------------------------------------------------------------------


@pytest.mark.parametrize("scale", [0.3, 1.0])
@pytest.mark.parametrize("dim", [16, 32])
def test_kernelized_is_the_quadratic_formula_in_value_and_gradient(scale, dim):
    q, k, v, mask = make_inputs([200, 130, 9], 200, scale=scale, dim=dim)
    real = mask[:, None, :, None]
    results = []
    for function in (core("kernelized", 200, dim), quadratic_kernelized):
        inputs = [t.clone().requires_grad_(True) for t in (q, k, v)]
        out = function(*inputs, mask)
        (out * real * v.flip(-1)).sum().backward()  # a loss that weighs every output entry differently
        results.append([out * real, *(t.grad * real for t in inputs)])
    for label, new, old in zip(("out", "dq", "dk", "dv"), *results, strict=True):
        assert relative_error(new, old) < 1e-5, label


def test_kernelized_fully_padded_sequence_gives_zeros_and_finite_gradients():
    q, k, v, mask = make_inputs([40, 0], 40)
    for t in (q, k, v):
        t.requires_grad_(True)
    out = core("kernelized", 40)(q, k, v, mask)
    assert torch.equal(out[1], torch.zeros_like(out[1]))
    out.square().sum().backward()
    assert all(torch.isfinite(t.grad).all() for t in (q, k, v))


def test_kernelized_query_far_from_every_key_gives_zeros_not_nan():
    q, k, v, _ = make_inputs([64], 64)
    q[:, :, 5] += 1e3  # every weight of this query underflows, the normaliser channel does not
    out = core("kernelized", 64)(q, k, v, None)
    assert torch.isfinite(out).all()
    assert torch.equal(out[:, :, 5], torch.zeros_like(out[:, :, 5]))
    torch.testing.assert_close(out, quadratic_kernelized(q, k, v, torch.ones(1, 64, dtype=torch.bool)))


@pytest.mark.parametrize("name", EXACT)
def test_exact_cores_run_on_the_fused_cpu_kernel(name):
    """Restricted to the flash backend (CPU: linear memory), forward and backward still run."""
    q, k, v, mask = make_inputs([96, 41], 96)
    for t in (q, k, v):
        t.requires_grad_(True)
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
        out = core(name, 96).eval()(q, k, v, mask)
        out.sum().backward()
    assert torch.isfinite(out).all() and all(t.grad is not None for t in (q, k, v))


# --- attention_dropout ----------------------------------------------------------------------------


def exact_attention_matrix(name: str, q, k, mask) -> torch.Tensor:
    """softmax(QKᵀ/√d) (padded keys excluded) or κ(Q̂, K̂) (padded keys zero): (B, H, N, N)."""
    eye = torch.eye(q.shape[2]).expand(*q.shape[:2], -1, -1)  # V = I: the output is the matrix
    if name == "standard":
        return core("standard", q.shape[2], q.shape[-1])(q, k, eye, mask)
    return quadratic_kernelized(q, k, eye, mask)


@pytest.mark.parametrize("name", EXACT)
def test_dropout_is_off_in_eval_and_dropout_zero_in_training_is_eval(name):
    q, k, v, mask = make_inputs([64, 30], 64)
    evaluated = core(name, 64).eval()(q, k, v, mask)
    assert torch.equal(core(name, 64).train()(q, k, v, mask), evaluated)
    with_dropout = core(name, 64, attention_dropout=0.3)
    assert torch.equal(with_dropout.eval()(q, k, v, mask), evaluated)
    torch.manual_seed(0)
    assert not torch.allclose(with_dropout.train()(q, k, v, mask), evaluated)


@pytest.mark.parametrize("name", EXACT)
def test_dropout_drops_entries_of_the_attention_matrix_with_inverted_scaling(name):
    """With V = I the output is the attention matrix after dropout: each entry is 0 (dropped, with
    probability p) or the exact entry / (1 − p) — for kernelized, of κ, with an undropped normaliser."""
    p, seq = 0.3, 64
    q, k, _, mask = make_inputs([64, 40], seq, scale=0.3, dim=seq)
    exact = exact_attention_matrix(name, q, k, mask)
    eye = torch.eye(seq).expand(*q.shape[:2], -1, -1)
    torch.manual_seed(0)
    dropped = core(name, seq, dim=seq, attention_dropout=p).train()(q, k, eye, mask)
    real_keys = mask[:, None, None, :].expand_as(exact)
    kept = dropped != 0
    torch.testing.assert_close(dropped[kept], exact[kept] / (1 - p), rtol=1e-4, atol=1e-7)
    fraction_dropped = (~kept & real_keys).sum() / real_keys.sum()
    assert abs(fraction_dropped.item() - p) < 0.02  # 13k entries: the standard error is 0.004
    assert torch.equal(dropped[~real_keys], torch.zeros_like(dropped[~real_keys]))


@pytest.mark.parametrize("name", EXACT)
def test_dropout_keeps_the_expected_output(name):
    """E[dropout(A) V] = A V: the mean over many draws approaches the output without dropout."""
    q, k, v, mask = make_inputs([32, 20], 32, scale=0.5)
    exact = core(name, 32).eval()(q, k, v, mask)
    dropout = core(name, 32, attention_dropout=0.2).train()
    torch.manual_seed(1)
    mean = torch.stack([dropout(q, k, v, mask) for _ in range(400)]).mean(dim=0)
    real = mask[:, None, :, None]
    assert relative_error(mean * real, exact * real) < 0.05
