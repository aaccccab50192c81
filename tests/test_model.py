"""The shared encoder (lra.model.LRAClassifier) as docs/design.md § The encoder describes it."""

from __future__ import annotations

import math
from functools import partial

import pytest
import torch

import attention_zoo
from lra.job.callbacks import parameter_counts
from lra.model.encoder import LRAClassifier, padding_mask

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


# The LRA code's encoder options (experiment=lra): qkv width, no projection biases, CLS token, sinusoids.
LRA_OPTIONS = {"qkv_dim": 16, "qkv_bias": False, "cls_token": True, "learn_pos_emb": False}


def test_qkv_width_apart_from_the_model_width():
    calls = []

    def factory(**shapes):
        calls.append(shapes)
        return attention_zoo.build_attention("standard", **shapes)

    model = LRAClassifier(
        vocab_size=20, num_classes=2, seq_len=SEQ, attention=factory, dim=32, num_heads=4, **LRA_OPTIONS
    )
    attention = model.encoder.blocks[0].attention
    assert (attention.qkv.weight.shape, attention.out.weight.shape) == ((48, 32), (32, 16))
    assert attention.qkv.bias is None and attention.out.bias is None
    assert calls[0] == {"dim": 32, "head_dim": 4, "num_heads": 4, "seq_len": SEQ + 1}  # CLS is a position
    lengths = torch.tensor([SEQ, 5])
    assert model.eval()(random_tokens(2, lengths.tolist()), lengths).shape == (2, 2)


def test_qkv_width_not_divisible_by_heads_names_the_key():
    with pytest.raises(ValueError, match="model.qkv_dim=18 must be a multiple of model.num_heads=4"):
        LRAClassifier(
            vocab_size=20, num_classes=2, seq_len=SEQ, attention=None, dim=32, num_heads=4, qkv_dim=18
        )


def test_sinusoids_are_the_lra_table_and_no_parameter():
    model = make_lra_model()
    table = model.encoder.position_table
    assert model.encoder.position_embedding is None and "position_table" not in model.state_dict()
    position, feature = 7, 6  # sin at even features, cos at odd ones, frequency 10000^(-feature/dim)
    frequency = 10000 ** (-feature / 32)
    assert table[position, feature].item() == pytest.approx(math.sin(position * frequency), abs=1e-6)
    assert table[position, feature + 1].item() == pytest.approx(math.cos(position * frequency), abs=1e-6)


def make_lra_model(pooling: str = "first", **options) -> LRAClassifier:
    torch.manual_seed(0)
    factory = partial(attention_zoo.build_attention, "standard")
    return LRAClassifier(
        vocab_size=20,
        num_classes=3,
        seq_len=SEQ,
        attention=factory,
        dim=32,
        num_heads=2,
        pooling=pooling,
        **{**LRA_OPTIONS, **options},
    ).eval()


def test_cls_pooling_reads_the_cls_tokens_state_and_ignores_padding():
    model = make_lra_model()
    lengths = torch.tensor([SEQ, 6])
    tokens = random_tokens(2, lengths.tolist())
    mask = padding_mask(lengths, SEQ)
    states = model.encoder.encode(tokens, mask)  # (B, 1 + N, dim)
    assert states.shape == (2, SEQ + 1, 32)
    torch.testing.assert_close(model.pooled(tokens, mask), states[:, 0])
    assert model.encoder(tokens, mask).shape == (2, SEQ, 32)  # token states only (self-pretraining's)
    noisy = torch.where(mask, tokens, torch.randint(1, 20, tokens.shape))
    torch.testing.assert_close(model(tokens, lengths), model(noisy, lengths), atol=1e-5, rtol=1e-5)


def test_the_cls_token_starts_at_zero_and_learns():
    model = make_lra_model().train()
    assert not model.encoder.cls.detach().any()
    lengths = torch.tensor([SEQ, 9])
    model(random_tokens(2, lengths.tolist()), lengths).sum().backward()
    assert model.encoder.cls.grad.abs().sum() > 0


def test_first_pooling_without_a_cls_token_reads_the_first_token():
    model = make_lra_model(cls_token=False)
    lengths = torch.tensor([SEQ, 6])
    tokens, mask = random_tokens(2, lengths.tolist()), padding_mask(lengths, SEQ)
    torch.testing.assert_close(model.pooled(tokens, mask), model.encoder(tokens, mask)[:, 0])


def test_retrieval_concat_and_a_deeper_classifier():
    """The LRA code's dual head: [u, v] -> 512 -> 256 -> classes, here at a small scale."""
    model = make_lra_model(dual=True, dual_features="concat", classifier_dim=[12, 6])
    widths = [
        (layer.in_features, layer.out_features) for layer in model.classifier if hasattr(layer, "in_features")
    ]
    assert widths == [(64, 12), (12, 6), (6, 3)]
    lengths = torch.tensor([[SEQ, 7], [4, 12]])
    tokens = torch.stack(
        [random_tokens(2, lengths[:, 0].tolist(), 1), random_tokens(2, lengths[:, 1].tolist(), 2)], 1
    )
    u = model.pooled(tokens[:, 0], padding_mask(lengths[:, 0], SEQ))
    v = model.pooled(tokens[:, 1], padding_mask(lengths[:, 1], SEQ))
    torch.testing.assert_close(model(tokens, lengths), model.classifier(torch.cat([u, v], dim=-1)))


def test_unknown_pooling_or_combination_is_one_line():
    with pytest.raises(ValueError, match=r"^model.pooling='sum' is not one of mean, first, max$"):
        make_lra_model(pooling="sum")
    with pytest.raises(ValueError, match=r"^model.dual_features='sum' is not one of nli, concat$"):
        make_lra_model(dual_features="sum")
    with pytest.raises(ValueError, match=r"^model.classifier_activation='tanh' is not one of relu, gelu$"):
        make_lra_model(classifier_activation="tanh")


def test_the_mixers_parameters_are_those_of_the_blocks_attention_submodules():
    model = make_model("nystrom", num_landmarks=4)
    attention = [p for block in model.encoder.blocks for p in block.attention.parameters()]
    counts = parameter_counts(model)
    assert counts["model/mixer_params"] == sum(p.numel() for p in attention) > 0
    assert counts["model/params"] == sum(p.numel() for p in model.parameters()) > counts["model/mixer_params"]
