"""Properties every attention core must have (docs/design.md § The attention contract); the mixers'
are in tests/test_mixer_properties.py.

Cores that draw randomness in ``forward`` draw it from torch's global RNG, so every call here
is made under the same seed; a core must give each sequence a result that depends only on
that sequence's own real positions.
"""

from __future__ import annotations

import pytest
import torch

import attention_zoo

NAMES = [name for name in attention_zoo.available() if not attention_zoo.spec(name).mixer]
HEADS, HEAD_DIM = 2, 16
# Every core with its defaults, and the non-default options (the papers' code) that change its
# computation; dropout options are built but, as every core here, evaluated in eval mode.
VARIANTS = [
    *((name, {}) for name in NAMES),
    ("standard", {"attention_dropout": 0.1}),
    ("kernelized", {"attention_dropout": 0.1}),
    ("linformer", {"per_head": True, "share_kv": True, "init_std": 0.02}),
    ("performer", {"temperature": "d", "feature_epsilon": 1e-4}),
    # small blocks, window and budget, so that the sparse patterns (not their exact short-input
    # limit) meet these lengths
    ("bigbird", {"block_size": 8, "num_random_blocks": 2}),
    ("bigbird", {"block_size": 8, "redraw_random_blocks": True}),
    ("longformer", {"window": 9}),
    ("longformer", {"window": 9, "global_tokens": 3}),
    ("window", {"window": 9}),
    ("window", {"window": 8}),
    ("informer", {"num_features": 8}),
]
VARIANT_IDS = [name + "".join(f"-{k}={v}" for k, v in options.items()) for name, options in VARIANTS]


def make_inputs(batch: int, seq: int, lengths: list[int], seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(batch, HEADS, seq, HEAD_DIM, generator=gen) for _ in range(3))
    mask = torch.arange(seq)[None, :] < torch.tensor(lengths)[:, None]
    return q, k, v, mask


def run(core, q, k, v, mask, seed: int = 1234):
    torch.manual_seed(seed)
    return core(q, k, v, mask)


def build(name: str, seq: int, **options):
    torch.manual_seed(0)
    core = attention_zoo.build_attention(name, head_dim=HEAD_DIM, num_heads=HEADS, seq_len=seq, **options)
    return core.eval()


def test_every_registered_core_approximates_nothing_or_a_registered_core():
    for name in NAMES:
        assert attention_zoo.spec(name).approximates in (None, *NAMES), name


@pytest.mark.parametrize("name", attention_zoo.available())
def test_unknown_option_lists_valid_ones(name):
    with pytest.raises(ValueError, match="valid options"):
        attention_zoo.build_attention(name, not_an_option=1)


def test_unknown_name_lists_valid_ones():
    with pytest.raises(ValueError, match="standard"):
        attention_zoo.build_attention("no-such-attention")


@pytest.mark.parametrize(("name", "options"), VARIANTS, ids=VARIANT_IDS)
def test_shape_dtype_and_gradients(name, options):
    seq = 96
    core = build(name, seq, **options).train()
    q, k, v, mask = make_inputs(3, seq, [96, 50, 7])
    for t in (q, k, v):
        t.requires_grad_(True)
    out = run(core, q, k, v, mask)
    assert out.shape == q.shape and out.dtype == q.dtype
    (out * mask[:, None, :, None]).square().sum().backward()
    for label, t in (("q", q), ("k", k), ("v", v)):
        assert t.grad is not None, f"{name}: no gradient reaches {label}"
        assert torch.isfinite(t.grad).all(), f"{name}: non-finite gradient on {label}"
        assert t.grad.abs().sum() > 0, f"{name}: zero gradient on {label}"


@pytest.mark.parametrize(("name", "options"), VARIANTS, ids=VARIANT_IDS)
@pytest.mark.parametrize("seq", [1, 7, 64, 1000])
def test_finite_for_every_length_and_padded_tails(name, options, seq):
    core = build(name, seq, **options)
    lengths = [seq, max(seq // 2, 1), 1, 0]  # full, half, one real token, fully padded
    q, k, v, mask = make_inputs(4, seq, lengths)
    out = run(core, q, k, v, mask)
    assert torch.isfinite(out).all(), f"{name}: NaN/inf at seq={seq}"
    assert torch.isfinite(run(core, q, k, v, None)).all(), f"{name}: NaN/inf without a mask at seq={seq}"


@pytest.mark.parametrize(("name", "options"), VARIANTS, ids=VARIANT_IDS)
def test_padding_content_is_irrelevant(name, options):
    seq = 200
    core = build(name, seq, **options)
    q, k, v, mask = make_inputs(3, seq, [200, 130, 61])
    noise = make_inputs(3, seq, [0, 0, 0], seed=99)[:3]
    pad = (~mask)[:, None, :, None]
    altered = [torch.where(pad, 100 * n, t) for t, n in zip((q, k, v), noise, strict=True)]
    real = mask[:, None, :, None]
    out_a = run(core, q, k, v, mask) * real
    out_b = run(core, *altered, mask) * real
    torch.testing.assert_close(out_a, out_b, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize(("name", "options"), VARIANTS, ids=VARIANT_IDS)
def test_batch_independence(name, options):
    seq = 160
    core = build(name, seq, **options)
    q, k, v, mask = make_inputs(3, seq, [160, 97, 33])
    batched = run(core, q, k, v, mask)
    for i in range(3):
        alone = run(core, q[i : i + 1], k[i : i + 1], v[i : i + 1], mask[i : i + 1])
        real = mask[i][None, None, :, None]
        torch.testing.assert_close(alone * real, batched[i : i + 1] * real, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name", NAMES)
def test_safe_under_autocast(name):
    seq = 128
    core = build(name, seq)
    q, k, v, mask = make_inputs(2, seq, [128, 40])
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = run(core, q.bfloat16(), k.bfloat16(), v.bfloat16(), mask)
    assert torch.isfinite(out.float()).all()
    reference = run(core, q, k, v, mask)
    torch.testing.assert_close(
        out.float() * mask[:, None, :, None], reference * mask[:, None, :, None], atol=0.1, rtol=0.1
    )


def test_multihead_wrapper_shapes():
    core = attention_zoo.build_attention("standard", head_dim=16, num_heads=4, seq_len=10)
    layer = attention_zoo.MultiHeadSelfAttention(64, 4, core, dropout=0.1)
    x = torch.randn(2, 10, 64)
    mask = torch.ones(2, 10, dtype=torch.bool)
    assert layer(x, mask).shape == (2, 10, 64)
