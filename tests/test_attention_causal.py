"""The causal mode of the attention contract (docs/attentions.md § The causal mode), over the registry:
every entry with a causal form lets no position see a later one, keeps padding invisible and gives
finite gradients; the exact ones equal their dense masked formulas; every entry without one is
refused in one line.

Cores that draw randomness in ``forward`` draw it from torch's global RNG, so the calls compared
here are made under the same seed.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

import attention_zoo
from attention_zoo.cores.kernelized import gaussian_kernel
from attention_zoo.cores.reformer import SELF_SCORE, lsh_buckets
from attention_zoo.registry import _REGISTRY, register_attention

HEADS, HEAD_DIM, DIM = 2, 16, 16
CAUSAL = [name for name in attention_zoo.available() if attention_zoo.supports_causal(name)]
NON_CAUSAL = [name for name in attention_zoo.available() if not attention_zoo.supports_causal(name)]
# Every causal entry with its defaults (the mixers one-directional, as causal needs), and options that
# make its sparse pattern or its chunks meet these lengths.
VARIANTS = [
    *((name, {"bidirectional": False} if attention_zoo.spec(name).mixer else {}) for name in CAUSAL),
    ("performer", {"num_features": 16}),
    ("longformer", {"window": 9}),
    ("reformer", {"chunk_size": 8}),
    ("reformer", {"chunk_size": 8, "n_hashes": 3}),
    ("s4d", {"bidirectional": False, "init": "inv", "d_state": 8}),
    ("mamba", {"bidirectional": False, "scan_chunk": 16}),
    ("gla", {"bidirectional": False, "chunk_size": 8}),
    ("retnet", {"bidirectional": False, "chunk_size": 7}),
    ("based", {"bidirectional": False, "chunk_size": 16}),
    ("mamba2", {"bidirectional": False, "headdim": 8, "chunk_size": 16}),
    ("deltanet", {"bidirectional": False, "chunk_size": 16}),
    ("gated_deltanet", {"bidirectional": False, "chunk_size": 7}),
    ("hyena", {"bidirectional": False, "filter_len": 9}),
]
VARIANT_IDS = [name + "".join(f"-{k}={v}" for k, v in options.items()) for name, options in VARIANTS]


def build(name: str, seq: int, causal: bool = True, **options) -> nn.Module:
    torch.manual_seed(0)
    shapes = {"dim": DIM} if attention_zoo.spec(name).mixer else {"head_dim": HEAD_DIM, "num_heads": HEADS}
    return attention_zoo.build_attention(name, seq_len=seq, causal=causal, **shapes, **options).eval()


def make_inputs(
    name: str, lengths: list[int], seq: int, seed: int = 0
) -> tuple[list[torch.Tensor], torch.Tensor]:
    """The entry's inputs, [x] (B, N, dim) for a mixer or [q, k, v] (B, H, N, D) for a core, and the mask."""
    gen = torch.Generator().manual_seed(seed)
    shape = (
        (len(lengths), seq, DIM) if attention_zoo.spec(name).mixer else (len(lengths), HEADS, seq, HEAD_DIM)
    )
    count = 1 if attention_zoo.spec(name).mixer else 3
    mask = torch.arange(seq)[None, :] < torch.tensor(lengths)[:, None]
    return [torch.randn(shape, generator=gen) for _ in range(count)], mask


def axis(name: str) -> int:
    """The sequence axis of the entry's inputs and output."""
    return 1 if attention_zoo.spec(name).mixer else 2


def up_to(x: torch.Tensor, name: str, last: int) -> torch.Tensor:
    """The positions 0 … last of x."""
    return x.narrow(axis(name), 0, last + 1)


def replaced_after(name: str, inputs: list[torch.Tensor], last: int) -> list[torch.Tensor]:
    """inputs with every position after ``last`` replaced by large noise."""
    noise, _ = make_inputs(name, [1] * inputs[0].shape[0], inputs[0].shape[axis(name)], seed=7)
    shape = [1] * inputs[0].dim()
    shape[axis(name)] = -1
    later = (torch.arange(inputs[0].shape[axis(name)]) > last).view(shape)
    return [torch.where(later, 10 * n, t) for t, n in zip(inputs, noise, strict=True)]


def run(module: nn.Module, inputs: list[torch.Tensor], mask: torch.Tensor | None) -> torch.Tensor:
    torch.manual_seed(1234)
    return module(*inputs, mask)


def test_the_entries_with_a_causal_form():
    assert set(CAUSAL) == {
        "standard",
        "kernelized",
        "performer",
        "longformer",
        "window",
        "reformer",
        "s4d",
        "mamba",
        "gla",
        "retnet",
        "based",
        "mamba2",
        "deltanet",
        "gated_deltanet",
        "hyena",
    }
    assert set(NON_CAUSAL) >= {"nystrom", "skyformer", "linformer", "bigbird", "informer"}


@pytest.mark.parametrize(("name", "options"), VARIANTS, ids=VARIANT_IDS)
@pytest.mark.parametrize("last", [0, 37, 69])
def test_no_position_sees_a_later_one(name, options, last):
    seq = 96
    inputs, mask = make_inputs(name, [96, 70], seq)
    altered = replaced_after(name, inputs, last)
    causal = build(name, seq, **options)
    before, after = (up_to(run(causal, x, mask), name, last) for x in (inputs, altered))
    torch.testing.assert_close(after, before, atol=1e-5, rtol=1e-5)
    if last == 37:  # the same entry without the causal mode does see them: the check can fail
        options = options | ({"bidirectional": True} if attention_zoo.spec(name).mixer else {})
        full = build(name, seq, causal=False, **options)
        before, after = (up_to(run(full, x, mask), name, last) for x in (inputs, altered))
        assert (after - before).abs().max() > 1e-3


@pytest.mark.parametrize(("name", "options"), VARIANTS, ids=VARIANT_IDS)
def test_padding_is_invisible_under_causal(name, options):
    seq = 120
    inputs, mask = make_inputs(name, [120, 77, 30], seq)
    noise, _ = make_inputs(name, [0, 0, 0], seq, seed=99)
    pad = ~mask[..., None] if attention_zoo.spec(name).mixer else ~mask[:, None, :, None]
    altered = [torch.where(pad, 100 * n, t) for t, n in zip(inputs, noise, strict=True)]
    module = build(name, seq, **options)
    torch.testing.assert_close(
        run(module, altered, mask) * ~pad, run(module, inputs, mask) * ~pad, atol=1e-5, rtol=1e-5
    )


@pytest.mark.parametrize(("name", "options"), VARIANTS, ids=VARIANT_IDS)
@pytest.mark.parametrize("seq", [1, 7, 300])
def test_finite_output_and_gradients_under_causal(name, options, seq):
    inputs, mask = make_inputs(name, [seq, max(seq // 2, 1), 1, 0], seq)  # full, half, one token, none
    module = build(name, seq, **options).train()
    for t in inputs:
        t.requires_grad_(True)
    out = run(module, inputs, mask)
    real = mask[..., None] if attention_zoo.spec(name).mixer else mask[:, None, :, None]
    (out * real).square().sum().backward()
    assert torch.isfinite(out).all(), f"{name}: NaN/inf at seq={seq}"
    assert torch.isfinite(run(module, inputs, None)).all(), f"{name}: NaN/inf without a mask at seq={seq}"
    for t in inputs:  # (one key has a constant softmax: no gradient to q and k at length 1)
        assert torch.isfinite(t.grad).all() and (seq == 1 or t.grad.abs().sum() > 0), name


# --- against the dense masked formulas --------------------------------------------------------


def causal_mask(mask: torch.Tensor, reach: int | None = None) -> torch.Tensor:
    """(B, 1, N, N): key j real and j <= i (and i − j <= reach)."""
    pos = torch.arange(mask.shape[1])
    allowed = pos[None, :] <= pos[:, None]
    if reach is not None:
        allowed &= pos[:, None] - pos[None, :] <= reach
    return allowed & mask[:, None, None, :]


def masked_softmax(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    scores = (q @ k.transpose(-1, -2) * HEAD_DIM**-0.5).masked_fill(~allowed, -1e30)
    return scores.softmax(-1) @ v


def relative_error(x: torch.Tensor, reference: torch.Tensor, mask: torch.Tensor) -> float:
    real = mask[:, None, :, None]
    return ((x - reference) * real).norm().item() / (reference * real).norm().item()


@pytest.mark.parametrize(
    ("name", "options", "reach"),
    [("standard", {}, None), ("longformer", {}, 128), ("longformer", {"window": 9}, 4)],
)
def test_standard_and_longformer_causal_equal_a_dense_masked_softmax(name, options, reach):
    (q, k, v), mask = make_inputs(name, [150, 97], 150)
    core = build(name, 150, **options)
    assert relative_error(core(q, k, v, mask), masked_softmax(q, k, v, causal_mask(mask, reach)), mask) < 1e-5
    full = torch.ones_like(mask)
    assert relative_error(core(q, k, v, None), masked_softmax(q, k, v, causal_mask(full, reach)), full) < 1e-5


def test_kernelized_causal_equals_the_masked_kernel_product():
    (q, k, v), mask = make_inputs("kernelized", [150, 97], 150)
    scale = HEAD_DIM**-0.25
    kernel = gaussian_kernel(q * scale, k * scale) * causal_mask(mask)  # κ(Q̂, K̂) masked: (B, H, N, N)
    assert relative_error(build("kernelized", 150)(q, k, v, mask), kernel @ v, mask) < 1e-5


def test_performer_causal_equals_prefix_sums_of_its_own_features():
    (q, k, v), mask = make_inputs("performer", [150, 97], 150)
    core = build("performer", 150, num_features=64)
    features = core.features * core.input_scale

    def phi(x: torch.Tensor) -> torch.Tensor:  # (B, H, N, m), unstabilised
        return torch.exp(x @ features.T - (x * core.input_scale).square().sum(-1, keepdim=True) / 2)

    weights = (phi(q) @ phi(k).transpose(-1, -2)) * causal_mask(mask)  # (B, H, N, N)
    reference = weights @ v / weights.sum(-1, keepdim=True)
    assert relative_error(core(q, k, v, mask), reference, mask) < 1e-5


def test_performer_causal_error_to_causal_softmax_falls_as_features_grow():
    (q, k, v), mask = make_inputs("performer", [128, 90], 128)
    q, k = q * 0.5, k * 0.5
    exact = masked_softmax(q, k, v, causal_mask(mask))
    mean_errors = []
    for num_features in (16, 64, 256, 1024):
        core = build("performer", 128, num_features=num_features)
        errors = []
        for _ in range(8):
            core.redraw_features()
            errors.append(relative_error(core(q, k, v, mask), exact, mask))
        mean_errors.append(sum(errors) / len(errors))
    assert mean_errors == sorted(mean_errors, reverse=True), mean_errors  # falls at every step
    assert mean_errors[-1] < 0.15, mean_errors
    assert mean_errors[0] > 2 * mean_errors[-1], mean_errors


def test_reformer_causal_with_one_chunk_attends_to_the_earlier_keys_of_its_bucket():
    seq = 64
    (q, k, v), mask = make_inputs("reformer", [64, 41], seq)
    core = build("reformer", seq, n_hashes=1, chunk_size=seq)  # one chunk per bucket: its whole past
    torch.manual_seed(3)
    out = core(q, k, v, mask)
    torch.manual_seed(3)
    shared = q + k
    buckets = lsh_buckets(shared, mask, core.draw_rotations(seq))[:, :, 0]  # (B, H, N)
    scores = shared @ torch.nn.functional.normalize(shared, dim=-1).transpose(-1, -2) * HEAD_DIM**-0.5
    scores = scores.masked_fill(torch.eye(seq, dtype=torch.bool), SELF_SCORE)
    allowed = causal_mask(mask) & (buckets[..., :, None] == buckets[..., None, :])
    reference = scores.masked_fill(~allowed, -1e30).softmax(-1) @ v
    assert relative_error(out, reference, mask) < 1e-5
    assert (allowed.sum(-1) < causal_mask(mask).sum(-1)).any()  # the buckets do leave keys out


@pytest.mark.parametrize(
    "name", ["s4d", "mamba", "gla", "retnet", "based", "mamba2", "deltanet", "gated_deltanet", "hyena"]
)
def test_a_causal_mixer_is_its_one_directional_form(name):
    (x,), mask = make_inputs(name, [80, 33], 80)
    one_way = build(name, 80, causal=False, bidirectional=False)
    torch.testing.assert_close(build(name, 80, bidirectional=False)(x, mask), one_way(x, mask))


# --- refusals ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NON_CAUSAL)
def test_an_entry_without_a_causal_form_is_refused_in_one_line(name):
    line = rf"^attention '{name}' has no causal form; the causal mode works with: {', '.join(CAUSAL)}$"
    with pytest.raises(ValueError, match=line):
        attention_zoo.build_attention(name, causal=True)
    with pytest.raises(ValueError, match=line):
        attention_zoo.state_size(name, seq_len=64, dim=32, causal=True)


@pytest.mark.parametrize(
    ("name", "option", "value", "line"),
    [
        ("s4d", "bidirectional", True, "bidirectional=false, got true"),
        ("mamba", "bidirectional", True, "bidirectional=false, got true"),
        ("gla", "bidirectional", True, "bidirectional=false, got true"),
        ("retnet", "bidirectional", True, "bidirectional=false, got true"),
        ("based", "bidirectional", True, "bidirectional=false, got true"),
        ("mamba2", "bidirectional", True, "bidirectional=false, got true"),
        ("deltanet", "bidirectional", True, "bidirectional=false, got true"),
        ("gated_deltanet", "bidirectional", True, "bidirectional=false, got true"),
        ("hyena", "bidirectional", True, "bidirectional=false, got true"),
        ("longformer", "global_tokens", 2, "global_tokens=0, got 2"),
        ("performer", "feature_epsilon", 1e-4, "feature_epsilon=0.0, got 0.0001"),
    ],
)
def test_an_option_without_a_causal_form_is_refused_in_one_line(name, option, value, line):
    message = rf"^attention '{name}': causal=True needs {line}$"
    with pytest.raises(ValueError, match=message):
        attention_zoo.build_attention(name, causal=True, **{option: value})
    with pytest.raises(ValueError, match=message):
        attention_zoo.state_size(name, seq_len=64, dim=32, causal=True, **{option: value})


def test_causal_must_be_a_boolean():
    with pytest.raises(
        ValueError, match=r"^attention 'standard': causal must be a boolean \(true or false\), got 1$"
    ):
        attention_zoo.build_attention("standard", causal=1)


@pytest.fixture
def unflagged_core():
    """A core registered as a plugin registers one, without the causal flag."""

    @register_attention("unflagged")
    class Unflagged(nn.Module):
        def __init__(self, *, head_dim: int, num_heads: int, seq_len: int) -> None:
            super().__init__()

    yield "unflagged"
    del _REGISTRY["unflagged"]


def test_a_core_registered_without_the_flag_is_non_causal_and_refused(unflagged_core):
    assert not attention_zoo.supports_causal(unflagged_core)
    attention_zoo.build_attention(unflagged_core)  # builds as before
    with pytest.raises(ValueError, match="attention 'unflagged' has no causal form"):
        attention_zoo.build_attention(unflagged_core, causal=True)


@pytest.mark.parametrize("flagged", [True, False])
def test_the_flag_and_the_constructor_must_agree(flagged):
    with pytest.raises(TypeError, match="takes `causal` exactly when flagged"):

        @register_attention("disagreeing", causal=flagged)
        class Disagreeing(nn.Module):
            if flagged:

                def __init__(self, *, head_dim: int, num_heads: int, seq_len: int) -> None:
                    super().__init__()
            else:

                def __init__(self, *, head_dim: int, num_heads: int, seq_len: int, causal: bool = False):
                    super().__init__()

    assert "disagreeing" not in attention_zoo.available()
