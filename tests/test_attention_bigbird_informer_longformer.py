"""Method-specific tests of the bigbird, informer and longformer cores.

Each core is checked against a plain dense re-statement of its paper's mathematics (an (N × N)
mask or formula in float64), in value and gradient, and against exact softmax attention where its
pattern covers everything. The shared properties live in test_attention_properties.py.
"""

from __future__ import annotations

import math

import pytest
import torch
from conftest import compose_config
from helpers.dense_attention import assert_matches, masked_softmax_attention

import attention_zoo

HEADS, HEAD_DIM = 2, 8
Tensors = tuple[torch.Tensor, torch.Tensor, torch.Tensor]


def make_inputs(lengths: list[int], seq: int, seed: int = 0) -> tuple[torch.Tensor, ...]:
    gen = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(len(lengths), HEADS, seq, HEAD_DIM, generator=gen) for _ in range(3))
    mask = torch.arange(seq)[None, :] < torch.tensor(lengths)[:, None]
    return q, k, v, mask


def build(name: str, seq: int, **options):
    torch.manual_seed(0)
    return attention_zoo.build_attention(name, head_dim=HEAD_DIM, num_heads=HEADS, seq_len=seq, **options)


def assert_exact_softmax(core, q, k, v, mask):
    assert_matches(
        lambda q, k, v: core(q, k, v, mask),
        lambda q, k, v: masked_softmax_attention(q, k, v, mask[:, None, None, :]),
        (q, k, v),
        mask,
    )


# --- bigbird ----------------------------------------------------------------------------------


def bigbird_block_mask(core, num_blocks: int) -> torch.Tensor:
    """(H, nb, nb) bool: which key blocks each query block sees, re-stated from the paper."""
    blocks = torch.arange(num_blocks)
    allowed = ((blocks[:, None] - blocks[None, :]).abs() <= 1).expand(HEADS, -1, -1).clone()
    allowed[:, [0, -1], :] = True  # global blocks attend to everything
    allowed[:, :, [0, -1]] = True  # and everything attends to them
    random = core.random_blocks(num_blocks)  # (H, nb − 2, r)
    for head in range(HEADS):
        for row in range(num_blocks - 2):
            allowed[head, row + 1, random[head, row]] = True
    return allowed


@pytest.mark.parametrize(("seq", "lengths"), [(96, [96, 61, 9]), (90, [90, 33, 1])])
def test_bigbird_equals_softmax_under_its_block_mask(seq, lengths):
    core = build("bigbird", seq, block_size=8, num_random_blocks=2)
    q, k, v, mask = make_inputs(lengths, seq)
    num_blocks = -(-seq // 8)
    assert num_blocks >= core.min_blocks()
    blocks = bigbird_block_mask(core, num_blocks)
    dense = blocks.repeat_interleave(8, 1).repeat_interleave(8, 2)[:, :seq, :seq]
    allowed = dense[None] & mask[:, None, None, :]

    assert_matches(
        lambda q, k, v: core(q, k, v, mask),
        lambda q, k, v: masked_softmax_attention(q, k, v, allowed),
        (q, k, v),
        mask,
    )


def test_bigbird_random_blocks_follow_the_paper():
    core = build("bigbird", 512, block_size=8, num_random_blocks=3)
    random = core.random_blocks(20)
    assert random.shape == (HEADS, 18, 3)
    for head in range(HEADS):
        for row, chosen in enumerate(random[head].tolist(), start=1):
            assert len(set(chosen)) == 3
            assert all(0 < block < 19 and abs(block - row) > 1 for block in chosen), (row, chosen)
    assert not torch.equal(random[0], random[1])  # each head draws its own


def test_bigbird_pattern_is_fixed_and_seeded_unless_redrawn_in_training():
    core = build("bigbird", 512, block_size=8).train()
    first = core.random_blocks(40)
    torch.manual_seed(123)
    assert torch.equal(core.random_blocks(40), first)  # the same in every forward
    assert torch.equal(build("bigbird", 512, block_size=8).random_blocks(40), first)  # seeded build
    reloaded = attention_zoo.build_attention("bigbird", head_dim=HEAD_DIM, num_heads=HEADS, seq_len=512)
    assert not torch.equal(reloaded.random_blocks(40), first)  # another seed (and its pattern kept)
    reloaded.load_state_dict(core.state_dict())
    assert torch.equal(reloaded.random_blocks(40), first)  # saved with the model

    redrawing = build("bigbird", 512, block_size=8, redraw_random_blocks=True).train()
    torch.manual_seed(5)
    drawn = redrawing.random_blocks(40)
    assert not torch.equal(drawn, redrawing.random_blocks(40))
    torch.manual_seed(5)
    assert torch.equal(drawn, redrawing.random_blocks(40))  # from the global RNG
    assert torch.equal(redrawing.eval().random_blocks(40), redrawing.random_blocks(40))  # fixed in eval


def test_bigbird_below_its_pattern_is_exact_softmax():
    seq = 7 * 8 - 3  # 7 blocks of 8 < 3 random + 5
    core = build("bigbird", seq, block_size=8)
    q, k, v, mask = make_inputs([seq, 20], seq)
    assert_exact_softmax(core, q, k, v, mask)


# --- longformer -------------------------------------------------------------------------------


@pytest.mark.parametrize(("window", "global_tokens"), [(1, 0), (5, 0), (9, 0), (9, 3)])
def test_longformer_equals_softmax_under_its_band_mask(window, global_tokens):
    seq = 50
    core = build("longformer", seq, window=window, global_tokens=global_tokens)
    q, k, v, mask = make_inputs([50, 23, 2], seq)
    positions = torch.arange(seq)
    band = (positions[:, None] - positions[None, :]).abs() <= window // 2
    is_global = mask & (mask.cumsum(-1) <= global_tokens)  # the first g real tokens
    allowed = (band[None] | is_global[:, :, None] | is_global[:, None, :]) & mask[:, None, :]

    assert_matches(
        lambda q, k, v: core(q, k, v, mask),
        lambda q, k, v: masked_softmax_attention(q, k, v, allowed[:, None]),
        (q, k, v),
        mask,
    )


def test_longformer_window_covering_the_sequence_is_exact_softmax():
    seq = 30
    core = build("longformer", seq, window=2 * seq - 1)
    q, k, v, mask = make_inputs([30, 11], seq)
    assert_exact_softmax(core, q, k, v, mask)


# --- informer ---------------------------------------------------------------------------------


def informer_formula(q, k, v, mask, sampled: torch.Tensor, selected: int) -> torch.Tensor:
    """ProbSparse attention re-stated densely: M from the sampled keys, top-u real queries attend."""
    scores = q @ k.transpose(-1, -2)  # (B, H, N, N)
    batch_index = torch.arange(q.shape[0])[:, None, None]
    query_index = torch.arange(q.shape[2])[None, :, None]
    sampled_scores = scores[batch_index, :, query_index, sampled].permute(0, 3, 1, 2)  # (B, H, N, U)
    count = mask.sum(-1).to(q.dtype)[:, None, None]
    sparsity = sampled_scores.amax(-1) - sampled_scores.sum(-1) / count
    top = sparsity.masked_fill(~mask[:, None, :], -math.inf).topk(selected, dim=-1).indices
    full = masked_softmax_attention(q, k, v, mask[:, None, None, :])
    mean = (v * mask[:, None, :, None]).sum(2, keepdim=True) / count[..., None]
    chosen = torch.zeros(scores.shape[:3], dtype=torch.bool).scatter(2, top, True)[..., None]
    return torch.where(chosen, full, mean)


def test_informer_equals_its_formula_given_the_same_sampled_keys():
    seq = 64
    core = build("informer", seq, num_features=8)  # factor ⌈8 / ln 64⌉ = 2: U = u = 2·⌈ln 64⌉ = 10
    q, k, v, mask = make_inputs([64, 40, 3], seq)
    assert core.sample_size(seq) == 10
    torch.manual_seed(3)
    sampled = core.sample_keys(mask)
    assert sampled.shape == (3, seq, 10)
    assert all(mask[b, sampled[b]].all() for b in range(3))  # only real keys are sampled

    def ours(q, k, v):
        torch.manual_seed(3)
        return core(q, k, v, mask)

    assert_matches(ours, lambda q, k, v: informer_formula(q, k, v, mask, sampled, 10), (q, k, v), mask)


def test_informer_with_every_query_selected_is_exact_softmax():
    seq = 40
    core = build("informer", seq)  # factor ⌈128 / ln 40⌉ = 35: u = min(35·4, 40) = 40
    assert core.sample_size(seq) == seq
    q, k, v, mask = make_inputs([40, 17], seq)
    assert_exact_softmax(core, q, k, v, mask)


def test_informer_factor_follows_the_skyformer_code():
    assert build("informer", 2000).factor == math.ceil(128 / math.log(2000)) == 17
    assert build("informer", 4000).sample_size(4000) == 16 * 9


# --- options and presets ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "options", "message"),
    [
        ("longformer", {"window": 256}, "'longformer': window must be an odd integer >= 1, got 256"),
        ("longformer", {"window": 0}, "'longformer': window must be an odd integer >= 1, got 0"),
        ("longformer", {"global_tokens": -1}, "'longformer': global_tokens must be an integer >= 0"),
        ("bigbird", {"block_size": 0}, "'bigbird': block_size must be an integer >= 1, got 0"),
        ("bigbird", {"num_random_blocks": 1.5}, "'bigbird': num_random_blocks must be an integer"),
        ("informer", {"factor": 5}, "'informer' has no option.*valid options: num_features=128"),
    ],
)
def test_bad_options_are_one_line_naming_core_and_option(name, options, message):
    with pytest.raises(ValueError, match=message):
        attention_zoo.build_attention(name, **options)


def test_skyformer_preset_runs_the_authors_settings():
    bigbird = compose_config(["experiment=skyformer", "attention=bigbird"]).attention
    assert (bigbird.block_size, bigbird.num_random_blocks, bigbird.redraw_random_blocks) == (64, 3, True)
    assert compose_config(["experiment=skyformer", "attention=informer"]).attention.num_features == 128
    longformer = compose_config(["experiment=skyformer", "attention=longformer"]).attention
    assert (longformer.window, longformer.global_tokens) == (257, 0)
