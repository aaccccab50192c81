"""The state-size figure of every registered entry (``attention_zoo.state_size``): numbers per layer
carried across the sequence, each against its hand computation, and growing with the entry's budget."""

from __future__ import annotations

import pytest
from torch import nn

import attention_zoo
from attention_zoo.registry import _REGISTRY, register_attention

BUILT_IN = [
    "based", "bigbird", "deltanet", "gated_deltanet", "gla", "hyena", "informer", "kernelized",
    "linformer", "longformer", "mamba", "mamba2", "nystrom", "performer", "reformer", "retnet", "s4d",
    "skyformer", "standard",
]  # fmt: skip

# (name, options, seq_len, dim, num_heads, figure worked out by hand from the class's docstring)
BY_HAND = [
    ("standard", {}, 100, 64, 2, 2 * 100 * 64),
    ("standard", {}, 1024, 128, 4, 262144),
    ("kernelized", {}, 100, 64, 2, 12800),
    ("reformer", {"chunk_size": 8}, 300, 32, 2, 2 * 300 * 32),
    ("bigbird", {}, 4096, 64, 2, 524288),
    ("informer", {"num_features": 8}, 500, 32, 2, 32000),
    ("nystrom", {}, 1024, 64, 2, 2 * 64 * 64),  # 64 landmark keys and 64 rows of Ã⁺B̃V
    ("nystrom", {"num_landmarks": 64}, 40, 64, 2, 2 * 40 * 64),  # no more landmarks than tokens
    ("skyformer", {}, 1024, 64, 2, 2 * 128 * 64),
    ("skyformer", {"num_landmarks": 128}, 40, 64, 2, 2 * 80 * 64),  # rows of [Q; K]: 2 · 40
    ("linformer", {}, 1024, 64, 2, 2 * 256 * 64),
    ("linformer", {"proj_dim": 32}, 16, 64, 4, 4096),
    ("performer", {}, 1024, 64, 2, 256 * 64 + 256 * 2),  # φ(K)ᵀV per head plus φ(K)ᵀ1 per head
    ("performer", {"num_features": 16}, 50, 32, 4, 16 * 32 + 16 * 4),
    ("longformer", {}, 1024, 64, 2, 2 * 257 * 64),
    ("longformer", {"window": 9}, 100, 64, 2, 1152),
    ("longformer", {}, 100, 64, 2, 2 * 100 * 64),  # the window covers the sequence
    ("longformer", {"window": 9, "global_tokens": 2}, 100, 64, 2, 12800),  # globals read every key
    ("s4d", {}, 1024, 64, 2, 64 * 64 * 2),  # bidirectional by default
    ("s4d", {"d_state": 8, "bidirectional": False}, 4096, 32, 2, 256),
    ("mamba", {}, 1024, 64, 2, 16 * 2 * 64 * 2),  # d_state · expand·dim · directions
    ("mamba", {"d_state": 4, "expand": 3, "bidirectional": False}, 64, 16, 2, 192),
    ("gla", {}, 1024, 64, 2, 32 * 16 * 2),  # key_dim (dim / 2) · head value width (dim / 4) · directions
    ("gla", {"key_dim": 16, "heads": 2, "bidirectional": False}, 64, 64, 4, 16 * 32),
    ("retnet", {}, 1024, 64, 2, 64 * 16 * 2),  # key_dim (dim) · head value width (2·dim / 8) · directions
    ("retnet", {"key_dim": 32, "expand_v": 1.0, "heads": 4}, 64, 64, 2, 32 * 16 * 2),
    ("based", {}, 1024, 64, 2, (64 + 1) * (1 + 16 + 136)),  # (dim + heads) · Taylor features of 16
    ("based", {"feature_dim": 4, "heads": 2}, 64, 32, 4, (32 + 2) * (1 + 4 + 10)),
    ("mamba2", {}, 1024, 64, 2, 128 * 2 * 64 * 2),  # d_state · expand·dim · directions
    ("mamba2", {"d_state": 16, "bidirectional": False}, 64, 64, 2, 16 * 2 * 64),
    ("deltanet", {}, 1024, 64, 2, 64 * 32 * 2),  # key_dim (dim) · head value width (dim / 2) · directions
    ("deltanet", {"key_dim": 16, "heads": 4, "bidirectional": False}, 64, 64, 2, 16 * 16),
    ("gated_deltanet", {}, 1024, 64, 2, 64 * 64 * 2),  # key_dim · head value width (2·dim / 2) · directions
    ("gated_deltanet", {"key_dim": 32, "expand_v": 1.0}, 64, 64, 2, 32 * 32 * 2),
    ("hyena", {}, 1024, 64, 2, 64 * 1024 * 2),  # dim · every lag · directions (Zoology's d_model · L)
    ("hyena", {"filter_len": 16, "bidirectional": False}, 1024, 64, 2, 64 * 16),
    ("hyena", {"filter_len": 4096, "bidirectional": False}, 1024, 64, 2, 64 * 1024),  # no more than L
]


def test_every_built_in_entry_reports_a_positive_integer():
    assert set(BUILT_IN) <= set(attention_zoo.available())
    for name in BUILT_IN:
        figure = attention_zoo.state_size(name, seq_len=256, dim=64)
        assert isinstance(figure, int) and figure > 0, name


@pytest.mark.parametrize(("name", "options", "seq_len", "dim", "num_heads", "figure"), BY_HAND)
def test_each_figure_equals_its_hand_computation(name, options, seq_len, dim, num_heads, figure):
    assert attention_zoo.state_size(name, seq_len=seq_len, dim=dim, num_heads=num_heads, **options) == figure


@pytest.mark.parametrize(
    ("name", "options", "figure"),
    [
        ("standard", {}, 2 * 300 * 64),  # every key is still read by the last query
        ("longformer", {}, 2 * 129 * 64),  # the band to the past: w = 128 before and the token
        ("longformer", {"window": 9}, 2 * 5 * 64),
        ("s4d", {"bidirectional": False}, 64 * 64),
        ("mamba", {"bidirectional": False}, 16 * 2 * 64),
        ("gla", {"bidirectional": False}, 32 * 16),
        ("retnet", {"bidirectional": False}, 64 * 16),
        ("based", {"bidirectional": False}, 65 * 153),
        ("mamba2", {"bidirectional": False}, 128 * 2 * 64),
        ("deltanet", {"bidirectional": False}, 64 * 32),
        ("gated_deltanet", {"bidirectional": False}, 64 * 64),
        ("hyena", {"bidirectional": False}, 64 * 300),
    ],
)
def test_the_causal_figures(name, options, figure):
    assert attention_zoo.state_size(name, seq_len=300, dim=64, causal=True, **options) == figure


@pytest.mark.parametrize("name", [name for name in BUILT_IN if attention_zoo.spec(name).budget_option])
def test_the_figure_grows_with_the_budget(name):
    option = attention_zoo.spec(name).budget_option
    figures = [attention_zoo.state_size(name, seq_len=4096, dim=64, **{option: b}) for b in (8, 16, 32, 64)]
    if name == "informer":  # its budget sets how many queries read every key, not what is kept
        assert len(set(figures)) == 1, figures
    else:
        assert figures == sorted(set(figures)), figures  # strictly increasing


def test_options_are_checked_as_when_building():
    with pytest.raises(ValueError, match="attention 'nystrom': num_landmarks must be an integer >= 1, got 0"):
        attention_zoo.state_size("nystrom", seq_len=64, dim=32, num_landmarks=0)
    with pytest.raises(ValueError, match="attention 'standard' has no option"):
        attention_zoo.state_size("standard", seq_len=64, dim=32, num_landmarks=8)


@pytest.fixture
def core_without_a_figure():
    """A core as a plugin may register it: no ``state_size``."""

    @register_attention("figureless")
    class Figureless(nn.Module):
        def __init__(self, *, head_dim: int, num_heads: int, seq_len: int) -> None:
            super().__init__()

    yield "figureless"
    del _REGISTRY["figureless"]


def test_an_entry_without_a_figure_reports_none(core_without_a_figure):
    assert attention_zoo.state_size(core_without_a_figure, seq_len=64, dim=32) is None
