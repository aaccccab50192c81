"""The exact cores: ``kernelized`` through scaled_dot_product_attention against its quadratic formula,
and both exact cores on the CPU's fused kernel.
"""

from __future__ import annotations

import pytest
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

import attention_zoo
from attention_zoo.kernelized import gaussian_kernel
from attention_zoo.masking import zero_padding

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
