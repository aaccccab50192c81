"""``model.position=rope`` in the shared encoder: rotary positions on q and k of every block, no absolute
embedding, refused with a mixer; the absolute options unchanged."""

from __future__ import annotations

from functools import partial

import pytest
import torch

import attention_zoo
from lra.model.encoder import LRAClassifier, padding_mask

SEQ = 16


def make_model(attention: str = "standard", **options) -> LRAClassifier:
    torch.manual_seed(0)
    factory = partial(attention_zoo.build_attention, attention)
    return LRAClassifier(
        vocab_size=20, num_classes=3, seq_len=SEQ, attention=factory, dim=32, **options
    ).eval()


def token_states(model: LRAClassifier, tokens: torch.Tensor) -> torch.Tensor:
    """Every position's state: tokens (B, N) with every position real -> (B, N, dim)."""
    return model.encoder(tokens, padding_mask(torch.full((len(tokens),), SEQ), SEQ))


@pytest.mark.parametrize("fraction, dims", [(1.0, 16), (0.5, 8), (0.25, 4)])
def test_rope_rotates_its_fraction_of_each_head_in_every_block(fraction, dims):
    model = make_model(position="rope", rope_fraction=fraction)
    assert [block.attention.rotary.dims for block in model.encoder.blocks] == [dims, dims]
    assert make_model().encoder.blocks[0].attention.rotary is None


@pytest.mark.parametrize("learn_pos_emb", [True, False])
def test_rope_adds_no_absolute_embedding_and_no_parameter(learn_pos_emb):
    model = make_model(position="rope", learn_pos_emb=learn_pos_emb)
    assert model.encoder.position_embedding is None and model.encoder.position_table is None
    without_positions = make_model(positions=False)
    assert model.state_dict().keys() == without_positions.state_dict().keys()


def test_rope_tells_positions_apart_where_no_positions_cannot():
    """Without positions the encoder is permutation-equivariant; rotary positions break that, with the
    same weights."""
    plain, rotary = make_model(positions=False), make_model(position="rope")
    rotary.load_state_dict(plain.state_dict())
    tokens = torch.randint(1, 20, (2, SEQ), generator=torch.Generator().manual_seed(0))
    order = torch.randperm(SEQ, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        permuted = token_states(plain, tokens[:, order])
        torch.testing.assert_close(permuted, token_states(plain, tokens)[:, order])
        difference = token_states(rotary, tokens[:, order]) - token_states(rotary, tokens)[:, order]
    assert difference.abs().max() > 1e-3


def test_absolute_position_is_the_default_and_keeps_its_options():
    assert make_model().encoder.position_embedding is not None
    assert make_model(learn_pos_emb=False).encoder.position_table.shape == (SEQ, 32)
    assert make_model(positions=False).encoder.position_table is None


def test_rope_with_a_mixer_or_an_unknown_kind_is_one_line():
    with pytest.raises(ValueError, match="^attention 's4d' does not take rotary positions: a mixer"):
        make_model("s4d", position="rope")
    with pytest.raises(ValueError, match="^model.position='alibi' is not one of absolute, rope$"):
        make_model(position="alibi")
