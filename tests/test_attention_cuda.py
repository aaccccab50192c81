"""Every core and mixer on a CUDA GPU: forward and backward under bf16 autocast, and the exact cores on a
fused ``scaled_dot_product_attention`` backend (flash or memory-efficient) matching the math backend.

Marked ``cuda``: without a GPU every test here is skipped with the reason (tests/conftest.py).
Which fused kernel serves which call: ``standard`` under bf16 autocast without a mask → flash,
with a padding bias → memory-efficient (flash takes no mask); ``kernelized`` runs in float32 with
q, k, v padded to 36 features (head_dim 32 + 2, rounded up to a multiple of 4) → memory-efficient
(flash has no float32 kernel; memory-efficient wants float32 head sizes in multiples of 4).
``nystrom`` (two float32 calls of head_dim 32, the first with a padding bias) and ``skyformer`` (two
``kernelized``-style calls) → memory-efficient; their m × m inverses stay in float32 under autocast.
"""

from __future__ import annotations

import pytest
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

import attention_zoo
from attention_zoo.parts.scan import selective_scan

pytestmark = pytest.mark.cuda

HEADS, HEAD_DIM, SEQ = 2, 32, 256
FUSED = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION]
CORES = [name for name in attention_zoo.available() if not attention_zoo.spec(name).mixer]
MIXERS = [name for name in attention_zoo.available() if attention_zoo.spec(name).mixer]


def make_inputs(lengths: list[int] | None, seq: int = SEQ, seed: int = 0):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    batch = 2 if lengths is None else len(lengths)
    q, k, v = (
        torch.randn(batch, HEADS, seq, HEAD_DIM, device="cuda", generator=gen).requires_grad_(True)
        for _ in range(3)
    )
    mask = (
        None
        if lengths is None
        else torch.arange(seq, device="cuda")[None, :] < torch.tensor(lengths, device="cuda")[:, None]
    )
    return q, k, v, mask


def build(name: str, seq: int = SEQ, **options):
    torch.manual_seed(0)
    core = attention_zoo.build_attention(name, head_dim=HEAD_DIM, num_heads=HEADS, seq_len=seq, **options)
    return core.to("cuda").eval()


@pytest.mark.parametrize("name", CORES)
def test_forward_and_backward_under_bf16_autocast(name):
    q, k, v, mask = make_inputs([SEQ, 97])
    torch.manual_seed(1)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        out = build(name)(q, k, v, mask)
    assert out.shape == q.shape and torch.isfinite(out.float()).all()
    (out.float() * mask[:, None, :, None]).square().sum().backward()
    for label, t in (("q", q), ("k", k), ("v", v)):
        assert t.grad is not None and torch.isfinite(t.grad).all(), f"{name}: gradient on {label}"
        assert t.grad.abs().sum() > 0, f"{name}: zero gradient on {label}"


@pytest.mark.parametrize("name", MIXERS)
def test_mixer_forward_and_backward_under_bf16_autocast(name):
    torch.manual_seed(0)
    mixer = attention_zoo.build_attention(name, dim=HEADS * HEAD_DIM, seq_len=SEQ).to("cuda")
    x = torch.randn(2, SEQ, HEADS * HEAD_DIM, device="cuda", requires_grad=True)
    mask = torch.arange(SEQ, device="cuda")[None, :] < torch.tensor([SEQ, 97], device="cuda")[:, None]
    with torch.autocast("cuda", dtype=torch.bfloat16):
        out = mixer(x, mask)
    assert out.shape == x.shape and torch.isfinite(out.float()).all()
    (out.float() * mask[..., None]).square().sum().backward()
    assert torch.isfinite(x.grad).all() and x.grad.abs().sum() > 0


def test_mamba_scan_in_one_long_chunk_matches_the_cpu():
    """3000 positions: one chunk of the GPU's default length (2048, its block ends scanned by blocks
    of blocks) and a partial one, against the CPU's cache-sized chunks, outputs and gradients, each to
    1e-4 of its largest entry (the GPU's measured difference is 1e-5 of it)."""
    gen = torch.Generator().manual_seed(0)
    u, B, C = (torch.randn(2, 3000, n, generator=gen) for n in (64, 16, 16))
    delta, A = 0.05 * torch.rand(2, 3000, 64, generator=gen), -torch.rand(64, 16, generator=gen)
    weights = torch.randn(2, 3000, 64, generator=gen)
    results = []
    for device in ("cpu", "cuda"):
        inputs = [t.to(device).requires_grad_(True) for t in (u, delta, A, B, C)]
        y = selective_scan(*inputs)
        grads = torch.autograd.grad((y * weights.to(device)).sum(), inputs)
        results.append([t.cpu() for t in (y, *grads)])
    for got, expected in zip(results[1], results[0], strict=True):  # float32 sums in other orders
        assert (got - expected).abs().max() <= 1e-4 * expected.abs().max()


def test_bigbird_block_sparse_path_matches_the_cpu():
    """1024 tokens in blocks of 64: the sparse path (the default test length is short enough to be
    exact attention), whose fused SDPA output comes in another memory layout than the CPU's."""
    q, k, v, mask = make_inputs([1024, 700], seq=1024)
    core = build("bigbird", seq=1024)
    assert -(-1024 // core.block_size) >= core.min_blocks()
    out = core(q, k, v, mask)
    (out * mask[:, None, :, None]).square().sum().backward()
    on_cpu = [t.detach().cpu().requires_grad_(True) for t in (q, k, v)]
    expected = core.cpu()(*on_cpu, mask.cpu())
    (expected * mask.cpu()[:, None, :, None]).square().sum().backward()
    for label, a, b in zip(
        ("out", "dq", "dk", "dv"),
        (out, q.grad, k.grad, v.grad),
        (expected, *(t.grad for t in on_cpu)),
        strict=True,
    ):
        torch.testing.assert_close(
            a.cpu(), b, atol=1e-4, rtol=1e-4, msg=lambda text, label=label: f"{label}: {text}"
        )


def run_on(backends: list[SDPBackend], name: str, lengths: list[int] | None, autocast: bool):
    """Output and input gradients of ``name`` with SDPA restricted to ``backends``."""
    q, k, v, mask = make_inputs(lengths)
    with sdpa_kernel(backends):
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
            out = build(name)(q, k, v, mask)
        out.float().square().sum().backward()  # outside autocast, as torch recommends
    return [t.float() for t in (out, q.grad, k.grad, v.grad)]


@pytest.mark.parametrize("autocast", [False, True], ids=["float32", "bf16-autocast"])
@pytest.mark.parametrize("lengths", [None, [SEQ, 61]], ids=["no-mask", "padded"])
@pytest.mark.parametrize("name", ["standard", "kernelized", "nystrom", "skyformer"])
def test_sdpa_cores_run_on_a_fused_backend_and_match_the_math_backend(name, lengths, autocast):
    fused = run_on(FUSED, name, lengths, autocast)  # raises "No available kernel" if neither accepts it
    math = run_on([SDPBackend.MATH], name, lengths, autocast)
    bf16 = autocast and name == "standard"  # the others compute in float32 under autocast
    tolerance = {"atol": 2e-2, "rtol": 2e-2} if bf16 else {"atol": 1e-4, "rtol": 1e-4}
    for label, a, b in zip(("out", "dq", "dk", "dv"), fused, math, strict=True):
        torch.testing.assert_close(a, b, **tolerance, msg=lambda text, label=label: f"{label}: {text}")


@pytest.mark.parametrize("name", ["standard", "kernelized"])
def test_attention_dropout_in_training_runs_on_a_fused_backend(name):
    q, k, v, mask = make_inputs([SEQ, 61])
    core = build(name, attention_dropout=0.1).train()
    with sdpa_kernel(FUSED):
        out = core(q, k, v, mask)
        out.square().sum().backward()
    assert torch.isfinite(out).all() and all(torch.isfinite(t.grad).all() for t in (q, k, v))


def test_kernelized_memory_is_linear_in_the_length():
    """n = 16384: the (n × n) float32 kernel of one head alone would take 1 GiB."""
    q, k, v, mask = make_inputs([16384], seq=16384)
    core = build("kernelized", seq=16384)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    start = torch.cuda.memory_allocated()
    with sdpa_kernel(FUSED):
        core(q, k, v, mask).sum().backward()
    torch.cuda.synchronize()
    assert torch.cuda.max_memory_allocated() - start < 256 * 2**20
