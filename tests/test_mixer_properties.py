"""Properties every mixer must have (docs/design.md § The attention contract), over every registered
mixer: x (batch, seq, dim), mask (batch, seq) bool or None -> (batch, seq, dim)."""

from __future__ import annotations

import pytest
import torch

import attention_zoo

MIXERS = [name for name in attention_zoo.available() if attention_zoo.spec(name).mixer]
DIM = 16
# Every mixer with its defaults, and one-directional (the padding rules differ by direction); small
# scan chunks so that the sequences here span several chunks.
VARIANTS = [
    *((name, {}) for name in MIXERS),
    ("s4d", {"bidirectional": False}),
    ("s4d", {"init": "inv", "d_state": 8}),
    ("mamba", {"bidirectional": False, "scan_chunk": 16}),
    ("mamba", {"scan_chunk": 7}),
    ("gla", {"bidirectional": False, "chunk_size": 8}),
    ("gla", {"chunk_size": 5, "heads": 2}),
    ("gla", {"use_short_conv": True, "bidirectional": False, "chunk_size": 8}),
    ("gla", {"use_short_conv": True, "chunk_size": 5}),
    ("retnet", {"use_short_conv": True, "chunk_size": 7}),
    ("retnet", {"bidirectional": False, "chunk_size": 16}),
    ("retnet", {"chunk_size": 7}),
    ("retnet", {"key_dim": 8}),  # heads of one key dimension: no pair to turn
    ("based", {"bidirectional": False, "chunk_size": 16}),
    ("based", {"bidirectional": False, "feature_dim": 4, "heads": 2, "chunk_size": 7}),
    ("mamba2", {"bidirectional": False, "headdim": 8, "chunk_size": 16}),
    ("mamba2", {"headdim": 16, "d_state": 8, "chunk_size": 7}),
    ("deltanet", {"bidirectional": False, "chunk_size": 16}),
    ("deltanet", {"chunk_size": 7, "heads": 4, "use_gate": True}),
    ("gated_deltanet", {"bidirectional": False, "chunk_size": 16}),
    ("gated_deltanet", {"chunk_size": 7, "key_dim": 8}),
    ("hyena", {"bidirectional": False}),
    ("hyena", {"filter_len": 5}),
]
VARIANT_IDS = [name + "".join(f"-{k}={v}" for k, v in options.items()) for name, options in VARIANTS]


def make_inputs(lengths: list[int], seq: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.randn(len(lengths), seq, DIM, generator=torch.Generator().manual_seed(seed))  # (B, N, dim)
    return x, torch.arange(seq)[None, :] < torch.tensor(lengths)[:, None]


def build(name: str, seq: int, **options) -> torch.nn.Module:
    torch.manual_seed(0)
    return attention_zoo.build_attention(name, dim=DIM, seq_len=seq, **options).eval()


def test_the_mixers_are_registered_as_mixers():
    assert MIXERS == [
        "based",
        "deltanet",
        "gated_deltanet",
        "gla",
        "hyena",
        "mamba",
        "mamba2",
        "retnet",
        "s4d",
    ]
    budgets = {"based": "feature_dim", "gla": "key_dim", "retnet": "key_dim", "hyena": "filter_len"}
    budgets |= {"deltanet": "key_dim", "gated_deltanet": "key_dim"}
    for name in MIXERS:
        spec = attention_zoo.spec(name)
        assert spec.approximates is None and spec.budget_option == budgets.get(name, "d_state")
        assert attention_zoo.is_mixer(build(name, 8))
    assert not attention_zoo.is_mixer(attention_zoo.build_attention("standard"))


@pytest.mark.parametrize(("name", "options"), VARIANTS, ids=VARIANT_IDS)
def test_shape_dtype_and_gradients(name, options):
    mixer = build(name, 40, **options).train()
    x, mask = make_inputs([40, 23, 3], 40)
    x.requires_grad_(True)
    out = mixer(x, mask)
    assert out.shape == x.shape and out.dtype == x.dtype
    (out * mask[..., None]).square().sum().backward()
    assert torch.isfinite(x.grad).all() and x.grad.abs().sum() > 0
    for parameter_name, parameter in mixer.named_parameters():
        assert parameter.grad is not None and torch.isfinite(parameter.grad).all(), parameter_name


@pytest.mark.parametrize(("name", "options"), VARIANTS, ids=VARIANT_IDS)
@pytest.mark.parametrize("seq", [1, 7, 64, 1000])
def test_finite_for_every_length_and_padded_tails(name, options, seq):
    mixer = build(name, seq, **options)
    x, mask = make_inputs([seq, max(seq // 2, 1), 1, 0], seq)  # full, half, one real token, fully padded
    with torch.no_grad():
        assert torch.isfinite(mixer(x, mask)).all(), f"{name}: NaN/inf at seq={seq}"
        assert torch.isfinite(mixer(x, None)).all(), f"{name}: NaN/inf without a mask at seq={seq}"


@pytest.mark.parametrize(("name", "options"), VARIANTS, ids=VARIANT_IDS)
def test_padding_content_is_irrelevant(name, options):
    seq = 120
    mixer = build(name, seq, **options)
    x, mask = make_inputs([120, 77, 30], seq)
    noise = 100 * make_inputs([0, 0, 0], seq, seed=99)[0]
    altered = torch.where(mask[..., None], x, noise)
    real = mask[..., None]
    torch.testing.assert_close(mixer(x, mask) * real, mixer(altered, mask) * real, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize(("name", "options"), VARIANTS, ids=VARIANT_IDS)
def test_a_full_mask_is_no_mask(name, options):
    mixer = build(name, 50, **options)
    x, mask = make_inputs([50, 50], 50)
    torch.testing.assert_close(mixer(x, mask), mixer(x, None), atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize(("name", "options"), VARIANTS, ids=VARIANT_IDS)
def test_batch_independence(name, options):
    seq = 90
    mixer = build(name, seq, **options)
    x, mask = make_inputs([90, 61, 12], seq)
    batched = mixer(x, mask)
    for i in range(3):
        alone = mixer(x[i : i + 1], mask[i : i + 1])
        real = mask[i][None, :, None]
        torch.testing.assert_close(alone * real, batched[i : i + 1] * real, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name", MIXERS)
def test_safe_under_autocast(name):
    mixer = build(name, 128)
    x, mask = make_inputs([128, 40], 128)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = mixer(x.bfloat16(), mask)
    assert torch.isfinite(out.float()).all()
    reference = mixer(x, mask)
    real = mask[..., None]
    torch.testing.assert_close(out.float() * real, reference * real, atol=0.1, rtol=0.1)
