"""The chunk form of gated linear attention (``attention_zoo.parts.gated_chunks``) equals its
recurrence step by step, outputs and gradients, for each shape of decay (per key dimension, per head,
none) and any chunk; it stays finite where the decays are strong; what its backward keeps grows
linearly with the length; and the Taylor feature map gives Based's kernel."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from attention_zoo.parts.feature_maps import taylor_features, taylor_size
from attention_zoo.parts.gated_chunks import (
    ChunkStates,
    chunked_gated_linear_attention,
    gated_linear_attention,
    recurrent_gated_linear_attention,
)
from attention_zoo.saved_memory import saved_tensor_bytes

B, T, H, K, V = 2, 37, 3, 5, 4


def inputs(kind: str, length: int = T, seed: int = 0, dtype=torch.float64) -> list[torch.Tensor | None]:
    """q, k (B, T, H, K), v (B, T, H, V) and the log decays of ``kind`` (vector, scalar or none)."""
    gen = torch.Generator().manual_seed(seed)
    q, k = (torch.randn(B, length, H, K, generator=gen, dtype=dtype) for _ in range(2))
    v = torch.randn(B, length, H, V, generator=gen, dtype=dtype)
    shapes = {"vector": (B, length, H, K), "scalar": (B, length, H)}
    g = F.logsigmoid(torch.randn(shapes[kind], generator=gen, dtype=dtype)) if kind in shapes else None
    return [q, k, v, g]


@pytest.mark.parametrize("kind", ["vector", "scalar", "none"])
@pytest.mark.parametrize("chunk", [1, 4, 16, 64])
def test_the_chunk_form_is_the_recurrence_with_its_gradients(kind, chunk):
    """Chunks of 4 and 16 leave a partial last chunk of the 37 positions; 64 is one chunk."""
    tensors = [None if t is None else t.requires_grad_(True) for t in inputs(kind)]
    leaves = [t for t in tensors if t is not None]
    weights = torch.randn(B, T, H, V, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    results = []
    for form in (recurrent_gated_linear_attention, lambda *t: chunked_gated_linear_attention(*t, chunk)):
        out = form(*tensors, 0.3)
        results.append((out, *torch.autograd.grad((out * weights).sum(), leaves)))
    for got, expected in zip(results[1], results[0], strict=True):
        torch.testing.assert_close(got, expected, atol=1e-10, rtol=1e-10)


@pytest.mark.parametrize("count", [1, 5, 37, 512])
def test_the_states_entering_the_chunks_are_their_recurrence(count):
    """512 chunks are 64 blocks, whose ends are scanned by blocks of blocks; 37 leave a partial block."""
    gen = torch.Generator().manual_seed(count)
    a = (0.5 + 0.5 * torch.rand(count, 2, 3, generator=gen, dtype=torch.float64)).requires_grad_(True)
    b = torch.randn(count, 2, 3, generator=gen, dtype=torch.float64, requires_grad=True)
    weights = torch.randn(count, 2, 3, generator=gen, dtype=torch.float64)
    state, expected = 0 * b[0], []  # a zero in the graph, so that one chunk has gradients (zero)
    for n in range(count):
        expected.append(state)
        state = a[n] * state + b[n]
    results = []
    for entering in (torch.stack(expected), ChunkStates.apply(a, b)):
        grads = torch.autograd.grad(
            (entering * weights).sum(), [a, b], allow_unused=True, materialize_grads=True
        )
        results.append((entering, *grads))
    for got, want in zip(results[1], results[0], strict=True):
        torch.testing.assert_close(got, want, atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("kind", ["vector", "scalar"])
def test_strong_decays_stay_finite_and_exact(kind):
    """Decays of e^-50 a step: factored as q·exp(b), k·exp(-b), a chunk of 16 would overflow float32."""
    q, k, v, g = inputs(kind, dtype=torch.float32)
    g = 50 * g - 50
    out = chunked_gated_linear_attention(q, k, v, g, 1.0, 16)
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out, recurrent_gated_linear_attention(q, k, v, g, 1.0), atol=1e-5, rtol=1e-5)


def kept_bytes(kind: str, length: int) -> int:
    tensors = [
        None if t is None else t.requires_grad_(True) for t in inputs(kind, length, dtype=torch.float32)
    ]
    run = lambda: gated_linear_attention(*tensors, 1.0, name="test", kernel="torch").sum()  # noqa: E731
    return saved_tensor_bytes(run, [t for t in tensors if t is not None])


@pytest.mark.parametrize("kind", ["vector", "scalar", "none"])
def test_what_backward_keeps_grows_linearly_with_the_length(kind):
    short, long = kept_bytes(kind, 512), kept_bytes(kind, 4096)
    assert math.log(long / short) / math.log(8) < 1.05, (short, long)


def test_the_taylor_map_is_the_second_order_expansion_of_the_exponential_kernel():
    gen = torch.Generator().manual_seed(0)
    x, y = (
        torch.randn(7, 6, generator=gen, dtype=torch.float64),
        torch.randn(7, 6, generator=gen, dtype=torch.float64),
    )
    dot = (x * y).sum(-1) / math.sqrt(6)  # Zoology's TaylorExp: 1 + x·y/√d + (x·y/√d)²/2
    phi_x, phi_y = taylor_features(x), taylor_features(y)
    assert phi_x.shape[-1] == taylor_size(6) == 1 + 6 + 21
    torch.testing.assert_close((phi_x * phi_y).sum(-1), 1 + dot + dot**2 / 2, atol=1e-12, rtol=1e-12)


def test_the_taylor_map_equals_flas():
    feature_map = pytest.importorskip(
        "fla.modules.feature_map", reason='fla is not installed: pip install -e ".[fla]"'
    )
    x = torch.randn(3, 5, 16, generator=torch.Generator().manual_seed(0))
    flas = feature_map.TaylorFeatureMap(head_dim=16)(x)
    ours = taylor_features(x)
    assert ours.shape == flas.shape
    gram = lambda phi: phi @ phi.transpose(-1, -2)  # noqa: E731  (the features' order may differ)
    torch.testing.assert_close(gram(ours), gram(flas), atol=1e-5, rtol=1e-5)
