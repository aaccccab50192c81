"""The shared encoder (lra.model.LRAClassifier) as docs/design.md § The encoder describes it."""

from __future__ import annotations

from functools import partial

import pytest
import torch

import attention_zoo
from lra.model import LRAClassifier, padding_mask

SEQ = 24


def make_model(
    attention: str = "standard", *, dual: bool = False, num_classes: int = 3, **options
) -> LRAClassifier:
    torch.manual_seed(0)
    factory = partial(attention_zoo.build_attention, attention, **options)
    return LRAClassifier(
        vocab_size=20, num_classes=num_classes, seq_len=SEQ, attention=factory, dim=32, dual=dual
    ).eval()


def random_tokens(batch: int, lengths: list[int], seed: int = 0) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    tokens = torch.randint(1, 20, (batch, SEQ), generator=gen)
    return tokens * padding_mask(torch.tensor(lengths), SEQ)


def test_mask_is_position_below_length():
    mask = padding_mask(torch.tensor([0, 2, 4]), 4)
    assert mask.tolist() == [[False] * 4, [True, True, False, False], [True] * 4]


def test_logits_shape_and_paper_sizes():
    model = LRAClassifier(
        vocab_size=20,
        num_classes=10,
        seq_len=SEQ,
        attention=partial(attention_zoo.build_attention, "standard"),
    )
    assert len(model.encoder.blocks) == 2
    assert model.encoder.token_embedding.embedding_dim == 64
    assert model.encoder.blocks[0].ffn[0].out_features == 128
    assert [layer.out_features for layer in model.classifier if hasattr(layer, "out_features")] == [128, 10]
    logits = model(random_tokens(3, [SEQ, 5, 1]), torch.tensor([SEQ, 5, 1]))
    assert logits.shape == (3, 10)


def test_each_layer_gets_its_own_core_built_with_the_model_shapes():
    calls = []

    def factory(**shapes):
        calls.append(shapes)
        return attention_zoo.build_attention("standard", **shapes)

    model = LRAClassifier(
        vocab_size=20, num_classes=2, seq_len=SEQ, attention=factory, dim=48, num_heads=3, depth=3
    )
    cores = [block.attention.core for block in model.encoder.blocks]
    assert len(calls) == 3 and len({id(core) for core in cores}) == 3
    assert calls == [{"dim": 48, "head_dim": 16, "num_heads": 3, "seq_len": SEQ}] * 3


def test_dim_not_divisible_by_heads_is_an_error():
    with pytest.raises(ValueError, match="model.dim=50 must be a multiple of model.num_heads=3"):
        LRAClassifier(vocab_size=20, num_classes=2, seq_len=SEQ, attention=None, dim=50, num_heads=3)


@pytest.mark.parametrize("attention", ["standard", "nystrom"])
def test_padding_content_changes_nothing(attention):
    options = {"num_landmarks": 4} if attention == "nystrom" else {}
    model = make_model(attention, **options)
    lengths = torch.tensor([SEQ, 10, 3])
    tokens = random_tokens(3, lengths.tolist())
    noisy = torch.where(padding_mask(lengths, SEQ), tokens, torch.randint(1, 20, tokens.shape))
    torch.testing.assert_close(model(tokens, lengths), model(noisy, lengths), atol=1e-5, rtol=1e-5)


def test_mean_pooling_divides_by_real_tokens():
    """A sequence and the same sequence with extra padding pool to the same vector."""
    model = make_model()
    short = random_tokens(1, [6])
    pooled = model.pooled(short, padding_mask(torch.tensor([6]), SEQ))
    alone = model.pooled(short[:, :6], torch.ones(1, 6, dtype=torch.bool))
    torch.testing.assert_close(pooled, alone, atol=1e-5, rtol=1e-5)


def test_token_zero_is_real_where_the_length_covers_it():
    """Pixel tasks: every length is the full image, so a black pixel (token 0) is a token, not padding."""
    model = make_model()
    full = torch.tensor([SEQ])
    image = torch.randint(1, 20, (1, SEQ))
    black = image.clone()
    black[0, 5] = 0
    assert not torch.allclose(model(image, full), model(black, full))


def test_batch_independence():
    model = make_model()
    lengths = torch.tensor([SEQ, 9, 2])
    tokens = random_tokens(3, lengths.tolist())
    together = model(tokens, lengths)
    for i in range(3):
        torch.testing.assert_close(
            model(tokens[i : i + 1], lengths[i : i + 1]), together[i : i + 1], atol=1e-5, rtol=1e-5
        )


def test_dual_encodes_both_documents_with_one_encoder():
    model = make_model(dual=True, num_classes=2)
    lengths = torch.tensor([[SEQ, 7], [4, 12]])
    tokens = torch.stack(
        [random_tokens(2, lengths[:, 0].tolist(), 1), random_tokens(2, lengths[:, 1].tolist(), 2)], 1
    )
    logits = model(tokens, lengths)
    assert logits.shape == (2, 2)
    u = model.pooled(tokens[:, 0], padding_mask(lengths[:, 0], SEQ))
    v = model.pooled(tokens[:, 1], padding_mask(lengths[:, 1], SEQ))
    expected = model.classifier(torch.cat([u, v, u * v, u - v], dim=-1))
    torch.testing.assert_close(logits, expected, atol=1e-5, rtol=1e-5)
    assert model.classifier[0].in_features == 4 * 32


def test_gradients_reach_every_parameter():
    model = make_model("nystrom", num_landmarks=4).train()
    lengths = torch.tensor([SEQ, 11])
    model(random_tokens(2, lengths.tolist()), lengths).sum().backward()
    missing = [name for name, p in model.named_parameters() if p.grad is None or not p.grad.abs().sum() > 0]
    assert not missing


def test_wrong_token_layout_is_a_clear_error():
    with pytest.raises(ValueError, match=r"\(batch, 2, seq\)"):
        make_model(dual=True)(random_tokens(2, [3, 4]), torch.tensor([3, 4]))
    with pytest.raises(ValueError, match="seq <= 24"):
        make_model()(torch.ones(1, SEQ + 1, dtype=torch.long), torch.tensor([SEQ + 1]))


def test_embeddings_start_as_both_papers_code_normal_with_std_002():
    model = LRAClassifier(
        vocab_size=300,
        num_classes=2,
        seq_len=512,
        attention=partial(attention_zoo.build_attention, "standard"),
    )
    for embedding in (model.encoder.token_embedding, model.encoder.position_embedding):
        weights = embedding.weight.detach()
        assert abs(weights.mean().item()) < 2e-3 and 0.019 < weights.std().item() < 0.021
