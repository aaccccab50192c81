"""Rotary positions (attention_zoo/parts/rotary.py) and which attentions take them.

The rotation itself: its pairing and fraction, relative-position invariance of q·k. Over the registry:
every core that declares ``rope=True`` gives the same output when every position is shifted and keeps
padding invisible inside ``MultiHeadSelfAttention``; every built-in core that does not is one whose
output a shift changes; every other core and every mixer is refused with one line.
"""

from __future__ import annotations

import pytest
import torch
from test_attention_properties import VARIANT_IDS, VARIANTS

import attention_zoo
from attention_zoo.parts.rotary import RotaryEmbedding, rotate, rotated_dims

HEADS, HEAD_DIM = 2, 16
CORES = [name for name in attention_zoo.available() if not attention_zoo.spec(name).mixer]
TAKERS = [(name, options) for name, options in VARIANTS if attention_zoo.supports_rope(name)]
TAKER_IDS = [
    i for i, (name, _) in zip(VARIANT_IDS, VARIANTS, strict=True) if attention_zoo.supports_rope(name)
]
BUILT_IN = [name for name in CORES if attention_zoo.spec(name).cls.__module__.startswith("attention_zoo.")]
REFUSED = [name for name in BUILT_IN if not attention_zoo.supports_rope(name)]
MIXERS = [name for name in attention_zoo.available() if attention_zoo.spec(name).mixer]


def qkv(batch: int, seq: int, seed: int = 0) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(batch, HEADS, seq, HEAD_DIM, generator=gen) for _ in range(3)]


def build(name: str, seq: int, **options) -> torch.nn.Module:
    torch.manual_seed(0)
    core = attention_zoo.build_attention(name, head_dim=HEAD_DIM, num_heads=HEADS, seq_len=seq, **options)
    return core.eval()


def shifted_outputs(core, q, k, v, mask, offset: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The core's output on q and k rotated from position 0, and from position ``offset``."""
    rotary, seq = RotaryEmbedding(HEAD_DIM), q.shape[-2]
    outs = []
    for start in (0, offset):
        torch.manual_seed(1234)  # cores that draw in forward draw the same
        outs.append(core(*rotary(q, k, torch.arange(start, start + seq)), v, mask))
    return outs[0], outs[1]


def test_pairs_are_half_split_at_base_10000():
    """Dimension j turns towards j + r/2 by the angle p·θ_j, θ_j = 10000^(−2j/r): pair 0 by p, pair 1
    by p·10000^(−2/r); the dimensions after r stay."""
    dims, position = 8, 3
    for pair in (0, 1, dims):
        unit = torch.eye(HEAD_DIM)[pair].view(1, 1, 1, HEAD_DIM)  # (1, 1, 1, D)
        angle = torch.tensor(position * 10000 ** (-2 * pair / dims))
        expected = torch.zeros(HEAD_DIM)
        if pair < dims // 2:
            expected[pair], expected[pair + dims // 2] = angle.cos(), angle.sin()
        else:
            expected[pair] = 1.0
        torch.testing.assert_close(rotate(unit, torch.tensor([position]), dims).flatten(), expected)


@pytest.mark.parametrize(("fraction", "dims"), [(1.0, 16), (0.5, 8), (0.25, 4), (0.3, 4), (0.125, 2)])
def test_the_first_fraction_of_the_dimensions_turns_and_the_rest_pass(fraction, dims):
    assert rotated_dims(HEAD_DIM, fraction) == dims
    q, k, _ = qkv(2, 12)
    rq, rk = RotaryEmbedding(HEAD_DIM, fraction)(q, k)
    assert torch.equal(rq[..., dims:], q[..., dims:]) and torch.equal(rk[..., dims:], k[..., dims:])
    assert not torch.allclose(rq[..., 1:, :dims], q[..., 1:, :dims])  # every position after the first turns
    torch.testing.assert_close(rq[..., 0, :], q[..., 0, :])  # position 0 does not
    torch.testing.assert_close(rq.norm(dim=-1), q.norm(dim=-1))  # a rotation keeps every norm


@pytest.mark.parametrize("fraction", [1.0, 0.25])
@pytest.mark.parametrize("offset", [1, 37, 1000])
def test_standard_scores_depend_only_on_the_relative_position(fraction, offset):
    seq = 64
    q, k, _ = qkv(2, seq)
    rotary = RotaryEmbedding(HEAD_DIM, fraction)
    scores = []  # q·k rotated from position 0, then from ``offset``: (B, H, N, N) each
    for start in (0, offset):
        rotated_q, rotated_k = rotary(q, k, torch.arange(start, start + seq))
        scores.append(rotated_q @ rotated_k.transpose(-1, -2))
    torch.testing.assert_close(scores[1], scores[0], atol=1e-5, rtol=1e-5)
    assert not torch.allclose(scores[0], q @ k.transpose(-1, -2), atol=1e-2)  # the rotation does change them
    # one content at every position: each score is a function of i − j alone (a Toeplitz matrix)
    same_q, same_k = (x[:, :, :1].expand(-1, -1, seq, -1) for x in (q, k))
    rotated_q, rotated_k = rotary(same_q, same_k)
    toeplitz = rotated_q @ rotated_k.transpose(-1, -2)  # (B, H, N, N)
    torch.testing.assert_close(toeplitz[..., 1:, 1:], toeplitz[..., :-1, :-1], atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize(("name", "options"), TAKERS, ids=TAKER_IDS)
def test_every_core_that_takes_rotary_positions_gives_the_same_output_under_a_shift(name, options):
    seq = 96
    core = build(name, seq, **options)
    q, k, v = qkv(2, seq)
    mask = torch.arange(seq)[None, :] < torch.tensor([96, 50])[:, None]
    first, shifted = shifted_outputs(core, q, k, v, mask, offset=1000)
    real = mask[:, None, :, None]
    torch.testing.assert_close(shifted * real, first * real, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("name", REFUSED)
def test_every_built_in_core_refused_is_one_whose_output_a_shift_changes(name):
    seq = 96
    core = build(name, seq)
    q, k, v = qkv(2, seq)
    first, shifted = shifted_outputs(core, q, k, v, None, offset=1000)
    assert not torch.allclose(shifted, first, atol=1e-3, rtol=1e-3), (
        f"{name}: a shift leaves its output as it is; register it with rope=True"
    )


@pytest.mark.parametrize(("name", "options"), TAKERS, ids=TAKER_IDS)
def test_padding_stays_invisible_and_gradients_flow_with_rotary_positions(name, options):
    seq, dim = 80, HEADS * HEAD_DIM
    torch.manual_seed(0)
    core = attention_zoo.build_attention(name, head_dim=HEAD_DIM, num_heads=HEADS, seq_len=seq, **options)
    layer = attention_zoo.MultiHeadSelfAttention(dim, HEADS, core, rope_fraction=0.5).eval()
    x = torch.randn(3, seq, dim, generator=torch.Generator().manual_seed(1), requires_grad=True)
    mask = torch.arange(seq)[None, :] < torch.tensor([80, 45, 0])[:, None]  # full, padded, fully padded
    altered = torch.where(mask[..., None], x, 100 * torch.randn(x.shape))
    real = mask[..., None]
    outs = []
    for inputs in (x, altered):
        torch.manual_seed(1234)
        outs.append(layer(inputs, mask) * real)
    torch.testing.assert_close(outs[1], outs[0], atol=1e-5, rtol=1e-5)
    outs[0].square().sum().backward()
    assert torch.isfinite(x.grad).all() and layer.qkv.weight.grad.abs().sum() > 0


def test_without_rotary_the_layer_is_bit_identical_to_the_core_between_its_projections():
    seq, dim = 20, HEADS * HEAD_DIM
    core = build("standard", seq)
    layer = attention_zoo.MultiHeadSelfAttention(dim, HEADS, core).eval()
    assert layer.rotary is None
    x, mask = torch.randn(2, seq, dim), torch.arange(seq)[None, :] < torch.tensor([20, 9])[:, None]
    q, k, v = layer.qkv(x).view(2, seq, 3, HEADS, HEAD_DIM).permute(2, 0, 3, 1, 4)
    expected = layer.out(core(q, k, v, mask).transpose(1, 2).reshape(2, seq, dim))
    assert torch.equal(layer(x, mask), expected)
    rotary_layer = attention_zoo.MultiHeadSelfAttention(dim, HEADS, core, rope_fraction=1.0)
    assert rotary_layer.state_dict().keys() == layer.state_dict().keys()  # no parameters of its own


@pytest.mark.parametrize("fraction", [0, -0.5, 1.5, float("nan"), True, "half"])
def test_a_fraction_outside_zero_to_one_is_one_line(fraction):
    with pytest.raises(ValueError, match=rf"^rope_fraction must be a number in \(0, 1\], got {fraction!r}$"):
        RotaryEmbedding(HEAD_DIM, fraction)


def test_a_fraction_that_rotates_no_pair_is_one_line():
    with pytest.raises(
        ValueError, match=r"^rope_fraction=0.1 of head_dim=16 rotates no pair .* at least 0.125$"
    ):
        attention_zoo.MultiHeadSelfAttention(32, 2, build("standard", 8), rope_fraction=0.1)


@pytest.mark.parametrize("name", [*REFUSED, *MIXERS])
def test_an_attention_that_takes_no_rotary_positions_is_refused_with_one_line_naming_it(name):
    assert not attention_zoo.supports_rope(name)
    dim, seq = HEADS * HEAD_DIM, 16
    module = attention_zoo.build_attention(name, dim=dim, head_dim=HEAD_DIM, num_heads=HEADS, seq_len=seq)
    reason = "its own recurrence" if name in MIXERS else "rope=True"
    with pytest.raises(
        ValueError, match=rf"^attention '{name}' does not take rotary positions: .*{reason}.*standard"
    ):
        attention_zoo.MultiHeadSelfAttention(dim, HEADS, module, rope_fraction=1.0)
    with pytest.raises(ValueError, match=rf"^attention '{name}' does not take rotary positions"):
        attention_zoo.check_rope(name)


def test_rotary_needs_a_registered_core_and_a_known_name():
    with pytest.raises(ValueError, match="^rotary positions need a registered attention core, got Identity$"):
        attention_zoo.MultiHeadSelfAttention(32, 2, torch.nn.Identity(), rope_fraction=1.0)
    with pytest.raises(ValueError, match="unknown attention 'nope'; valid names: .*window"):
        attention_zoo.supports_rope("nope")


def test_the_rotation_keeps_the_dtype_under_autocast():
    q, k, _ = qkv(1, 10)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        rq, rk = RotaryEmbedding(HEAD_DIM, 0.5)(q.bfloat16(), k.bfloat16())
    assert rq.dtype == rk.dtype == torch.bfloat16
