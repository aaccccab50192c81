"""Method-specific tests of the ``window`` core: the keys each query sees for odd and even windows, the
dense band-masked softmax it restates (value and gradient), exact softmax once the window covers the
sequence, and memory linear in the length. The shared properties (padding, batch independence,
gradients, every length with fully padded tails, autocast) run on it in test_attention_properties.py.
"""

from __future__ import annotations

import pytest
import torch
from conftest import compose_config
from helpers.dense_attention import assert_matches, masked_softmax_attention

import attention_zoo

HEADS, HEAD_DIM = 2, 8


def make_inputs(lengths: list[int], seq: int, seed: int = 0) -> tuple[torch.Tensor, ...]:
    gen = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(len(lengths), HEADS, seq, HEAD_DIM, generator=gen) for _ in range(3))
    mask = torch.arange(seq)[None, :] < torch.tensor(lengths)[:, None]
    return q, k, v, mask


def build(seq: int, **options) -> torch.nn.Module:
    return attention_zoo.build_attention("window", head_dim=HEAD_DIM, num_heads=HEADS, seq_len=seq, **options)


@pytest.mark.parametrize(("window", "keys"), [(1, 1), (2, 3), (7, 7), (8, 9), (9, 9)])
def test_a_query_sees_the_keys_within_half_the_window_on_each_side(window, keys):
    """With q = k = 0 every allowed key gets the same weight, and v = one-hot positions reads them off."""
    seq = 40
    v = torch.eye(seq)[None, None]  # (1, 1, N, N): value j is the indicator of position j
    zeros = torch.zeros(1, 1, seq, seq)
    weights = build(seq, window=window)(zeros, zeros, v)[0, 0]  # (N, N): query i's weight on key j
    middle = weights[seq // 2]
    seen = (middle > 0).nonzero().flatten() - seq // 2
    assert seen.tolist() == list(range(-(window // 2), window // 2 + 1))
    assert len(seen) == keys
    torch.testing.assert_close(middle[middle > 0], torch.full((keys,), 1 / keys))


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("window", [1, 2, 5, 8, 16])
def test_window_equals_softmax_under_its_band_mask(window, causal):
    """Causal: the band's past half, keys j with i − ⌊w/2⌋ <= j <= i."""
    seq = 50
    core = build(seq, window=window, causal=causal)
    q, k, v, mask = make_inputs([50, 23, 2, 0], seq)  # full, padded, two real tokens, fully padded
    positions = torch.arange(seq)
    offset = positions[:, None] - positions[None, :]  # (N, N): i − j
    band = (offset.abs() <= window // 2) & ((offset >= 0) | (not causal))  # (N, N)
    allowed = band[None, None] & mask[:, None, None, :]  # (B, 1, N, N)
    assert_matches(
        lambda q, k, v: core(q, k, v, mask),
        lambda q, k, v: masked_softmax_attention(q, k, v, allowed),
        (q, k, v),
        mask,
    )


@pytest.mark.parametrize("extra", [0, 1, 40])
def test_a_window_covering_the_sequence_is_exact_standard_attention(extra):
    seq = 30
    core = build(seq, window=2 * seq - 2 + extra)  # ⌊w/2⌋ >= N − 1: every key of every query
    standard = attention_zoo.build_attention("standard", head_dim=HEAD_DIM, num_heads=HEADS, seq_len=seq)
    q, k, v, mask = make_inputs([30, 11, 0], seq)
    real = mask[:, None, :, None]
    torch.testing.assert_close(core(q, k, v, mask) * real, standard(q, k, v, mask) * real)
    torch.testing.assert_close(core(q, k, v), standard(q, k, v))


def test_a_window_one_short_of_the_sequence_is_not_exact():
    seq = 30
    q, k, v, _ = make_inputs([30], seq)
    standard = attention_zoo.build_attention("standard", head_dim=HEAD_DIM, num_heads=HEADS, seq_len=seq)
    short = build(seq, window=2 * seq - 4)(q, k, v)  # the first and last positions miss each other
    assert not torch.allclose(short, standard(q, k, v))
    torch.testing.assert_close(short[:, :, 1:-1], standard(q, k, v)[:, :, 1:-1])


def saved_elements(seq: int, window: int) -> tuple[int, int]:
    """(total, largest) numbers of elements that forward keeps for backward at length ``seq``."""
    sizes: list[int] = []

    def keep(tensor: torch.Tensor) -> torch.Tensor:
        sizes.append(tensor.numel())
        return tensor

    q, k, v, mask = make_inputs([seq], seq)
    q.requires_grad_(True)
    with torch.autograd.graph.saved_tensors_hooks(keep, lambda tensor: tensor):
        build(seq, window=window)(q, k, v, mask)
    return sum(sizes), max(sizes)


def test_memory_is_linear_in_the_length_and_never_n_by_n():
    window = 16
    short_total, _ = saved_elements(512, window)
    long_total, largest = saved_elements(2048, window)
    assert long_total <= 4.5 * short_total  # 4 × the length: about 4 × the memory, not 16 ×
    assert largest < 2048 * 2048  # no (N × N) tensor, not even one head's


@pytest.mark.parametrize(
    ("options", "message"),
    [({"window": 0}, "'window': window must be an integer >= 1, got 0"),
     ({"window": 2.5}, "'window': window must be an integer >= 1, got 2.5")],
)  # fmt: skip
def test_a_bad_window_is_one_line_naming_the_option(options, message):
    with pytest.raises(ValueError, match=f"^attention {message}$"):
        build(16, **options)


def test_the_config_states_the_default_and_the_budget_sets_it():
    assert (
        compose_config(["attention=window"]).attention.window
        == attention_zoo.spec("window").options["window"]
    )
    assert compose_config(["attention=window", "features=32"]).attention.window == 32
    assert attention_zoo.spec("window").budget_option == "window"
