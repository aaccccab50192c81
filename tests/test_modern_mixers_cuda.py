"""On a CUDA GPU with fla installed: our chunk form of gated linear attention against fla's chunk
kernels (``chunk_gla``, ``chunk_simple_gla``), and each modern mixer with ``kernel=fla`` against the
same weights with ``kernel=torch``, outputs and gradients, on a padded batch longer than fla's
64-token chunks. fla's kernels multiply in TF32 on the GPU: the tolerance is a few 1e-3 relative."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from helpers.fla_gpu import needs_fla_on_this_gpu

import attention_zoo
from attention_zoo.parts.gated_chunks import gated_linear_attention

pytestmark = [pytest.mark.cuda, needs_fla_on_this_gpu]
pytest.importorskip("fla.ops", reason='fla is not installed: pip install -e ".[fla]"')

TOLERANCE = 5e-3
B, T, H, K, V = 2, 200, 4, 32, 32


def relative_error(got: torch.Tensor, expected: torch.Tensor) -> float:
    return ((got.float() - expected.float()).norm() / expected.float().norm()).item()


@pytest.mark.parametrize("kind", ["vector", "scalar", "none"])
def test_our_chunk_form_is_flas_chunk_kernel(kind):
    gen = torch.Generator(device="cuda").manual_seed(0)
    q, k = (torch.randn(B, T, H, K, device="cuda", generator=gen) for _ in range(2))
    v = torch.randn(B, T, H, V, device="cuda", generator=gen)
    shapes = {"vector": (B, T, H, K), "scalar": (B, T, H)}
    g = F.logsigmoid(torch.randn(shapes[kind], device="cuda", generator=gen)) if kind in shapes else None
    leaves = [t.requires_grad_(True) for t in (q, k, v, g) if t is not None]
    weights = torch.randn(B, T, H, V, device="cuda", generator=gen)
    results = []
    for kernel in ("torch", "fla"):
        out = gated_linear_attention(q, k, v, g, K**-0.5, name="test", kernel=kernel)
        results.append((out, *torch.autograd.grad((out * weights).sum(), leaves)))
    for ours, flas in zip(*results, strict=True):
        assert relative_error(ours, flas) < TOLERANCE


MIXERS = [
    ("gla", {}),
    ("gla", {"bidirectional": False}),
    ("retnet", {}),
    ("based", {"bidirectional": False}),
    ("mamba2", {"d_state": 32}),
    ("mamba2", {"bidirectional": False}),
]


@pytest.mark.parametrize(("name", "options"), MIXERS, ids=[f"{n}-{o}" for n, o in MIXERS])
def test_each_mixer_with_flas_kernel_is_the_mixer_with_ours(name, options):
    causal = options.get("bidirectional") is False
    lengths = torch.tensor([T, 131], device="cuda")
    mask = torch.arange(T, device="cuda")[None, :] < lengths[:, None]
    x = torch.randn(2, T, 64, device="cuda", generator=torch.Generator(device="cuda").manual_seed(1))
    results = []
    for kernel in ("torch", "fla"):
        torch.manual_seed(0)
        mixer = attention_zoo.build_attention(
            name, dim=64, seq_len=T, causal=causal, kernel=kernel, **options
        )
        inputs = x.clone().requires_grad_(True)
        out = mixer.cuda()(inputs, mask) * mask[..., None]
        results.append((out, torch.autograd.grad(out.square().sum(), inputs)[0]))
    for ours, flas in zip(*results, strict=True):
        assert relative_error(ours, flas) < TOLERANCE
