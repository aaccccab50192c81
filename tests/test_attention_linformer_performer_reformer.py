"""Method-specific tests of the linformer, performer and reformer cores.

The properties shared by every core (padding, batch independence, gradients, autocast) live
in test_attention_properties.py; here each core is checked against what its paper defines.
"""

from __future__ import annotations

from functools import partial

import pytest
import torch
import torch.nn.functional as F

import attention_zoo
from attention_zoo.cores.performer import orthogonal_gaussian_features
from attention_zoo.cores.reformer import lsh_buckets, sort_by_bucket
from lra.model.encoder import LRAClassifier

HEADS, HEAD_DIM = 2, 16


def make_inputs(batch: int, seq: int, lengths: list[int], seed: int = 0, scale: float = 1.0):
    gen = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(batch, HEADS, seq, HEAD_DIM, generator=gen) for _ in range(3))
    mask = torch.arange(seq)[None, :] < torch.tensor(lengths)[:, None]
    return q * scale, k * scale, v, mask


def build(name: str, seq: int, **options):
    torch.manual_seed(0)
    return attention_zoo.build_attention(name, head_dim=HEAD_DIM, num_heads=HEADS, seq_len=seq, **options)


def real_part(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return x * mask[:, None, :, None]


# --- performer --------------------------------------------------------------------------------


def test_performer_error_to_softmax_falls_as_features_grow():
    seq = 128
    q, k, v, mask = make_inputs(2, seq, [128, 90], scale=0.5)
    exact = real_part(build("standard", seq)(q, k, v, mask), mask)
    mean_errors = []
    for num_features in (16, 64, 256, 1024):
        core = build("performer", seq, num_features=num_features)
        errors = []
        for _ in range(8):
            core.redraw_features()
            approx = real_part(core(q, k, v, mask), mask)
            errors.append(((approx - exact).norm() / exact.norm()).item())
        mean_errors.append(sum(errors) / len(errors))
    assert mean_errors == sorted(mean_errors, reverse=True), mean_errors  # falls at every step
    assert mean_errors[-1] < 0.15, mean_errors
    assert mean_errors[0] > 2 * mean_errors[-1], mean_errors


def test_performer_redraw_changes_features_from_the_global_rng():
    core = build("performer", 32, num_features=40)
    before = core.features.clone()
    torch.manual_seed(5)
    core.redraw_features()
    drawn = core.features.clone()
    assert not torch.equal(before, drawn)
    torch.manual_seed(5)
    core.redraw_features()
    assert torch.equal(core.features, drawn)
    assert "features" in core.state_dict()


@pytest.mark.parametrize("num_features", [16, 40, 64])
def test_performer_rows_orthogonal_within_each_block(num_features):
    torch.manual_seed(1)
    features = orthogonal_gaussian_features(num_features, HEAD_DIM)
    assert features.shape == (num_features, HEAD_DIM)
    for block in features.split(HEAD_DIM):
        gram = block @ block.T
        off_diagonal = gram - torch.diag(gram.diagonal())
        assert off_diagonal.abs().max() < 1e-4 * gram.diagonal().max()


def test_performer_row_norms_follow_the_chi_distribution():
    torch.manual_seed(2)
    norms = orthogonal_gaussian_features(4096, HEAD_DIM).norm(dim=1)
    # chi(d): E[norm²] = d, and the norms vary (they are not fixed at √d)
    assert abs(norms.square().mean().item() - HEAD_DIM) < 0.05 * HEAD_DIM
    assert norms.std() > 0.5


def performer_vs_softmax_errors(temperature: str) -> dict[str, float]:
    """Mean relative error (4 draws of 2048 features) of performer with ``temperature`` to
    softmax(QKᵀ/√d) V and to softmax(QKᵀ/d) V."""
    seq = 64
    q, k, v, _ = make_inputs(2, seq, [seq, seq], scale=0.5)
    standard = build("standard", seq)
    exact = {"sqrt_d": standard(q, k, v, None), "d": standard(q * HEAD_DIM**-0.5, k, v, None)}
    core = build("performer", seq, num_features=2048, temperature=temperature)
    errors = dict.fromkeys(exact, 0.0)
    for _ in range(4):
        core.redraw_features()
        approx = core(q, k, v, None)
        for target, out in exact.items():
            errors[target] += ((approx - out).norm() / out.norm()).item() / 4
    return errors


def test_performer_temperature_d_converges_to_softmax_over_d_and_not_over_sqrt_d():
    errors = performer_vs_softmax_errors("d")
    assert errors["d"] < 0.05, errors
    assert errors["sqrt_d"] > 3 * errors["d"], errors


def test_performer_temperature_sqrt_d_converges_to_softmax_over_sqrt_d_and_not_over_d():
    errors = performer_vs_softmax_errors("sqrt_d")
    assert errors["sqrt_d"] < 0.1, errors
    assert errors["d"] > 1.5 * errors["sqrt_d"], errors


def test_performer_feature_epsilon_is_added_to_every_feature_of_real_positions():
    """A huge ε makes every real key's feature vector ≈ ε·1: attention becomes the mean of the real
    values (padded keys stay at 0); ε = 0 is the default."""
    seq = 48
    q, k, v, mask = make_inputs(2, seq, [48, 20])
    default = build("performer", seq)(q, k, v, mask)
    torch.testing.assert_close(build("performer", seq, feature_epsilon=0.0)(q, k, v, mask), default)
    assert not torch.allclose(build("performer", seq, feature_epsilon=1e-2)(q, k, v, mask), default)
    out = build("performer", seq, feature_epsilon=1e6)(q, k, v, mask)
    real = mask[:, None, :, None]
    mean_of_real = (v * real).sum(dim=2, keepdim=True) / real.sum(dim=2, keepdim=True)
    torch.testing.assert_close(out, mean_of_real.expand_as(out), atol=1e-4, rtol=1e-4)


# --- linformer --------------------------------------------------------------------------------


def per_head_linformer(q, k, v, mask, projection):
    """softmax(Q (Pᵀ K)ᵀ / √d) (Pᵀ V) with one P per head: projection (H, seq, proj_dim)."""
    p = projection[:, : q.shape[2]]
    k, v = real_part(k, mask), real_part(v, mask)
    keys = p.transpose(-1, -2) @ k  # (B, H, proj_dim, D)
    values = p.transpose(-1, -2) @ v
    return torch.softmax(q @ keys.transpose(-1, -2) / HEAD_DIM**0.5, dim=-1) @ values


PAPER_LAYOUTS = {  # the authors' LRA code
    "skyformer": {"per_head": True, "share_kv": True, "init_std": 0.02},
    "nystromformer": {"per_head": True, "share_kv": True, "share_layers": True, "init_std": 0.02},
}


@pytest.mark.parametrize("paper", PAPER_LAYOUTS)
def test_linformer_paper_layouts_are_one_projection_per_head_for_keys_and_values(paper):
    seq, proj_dim = 64, 16
    core = build("linformer", seq, proj_dim=proj_dim, **PAPER_LAYOUTS[paper])
    assert dict(core.named_parameters()).keys() == {"key_proj"}
    assert core.key_proj.shape == (HEADS, seq, proj_dim)
    assert abs(core.key_proj.std().item() - 0.02) < 0.002  # N(0, 0.02²)
    with torch.no_grad():
        core.key_proj.normal_()  # the formula is checked with projections of unit scale
    q, k, v, mask = make_inputs(2, seq, [64, 37])
    torch.testing.assert_close(
        real_part(core(q, k, v, mask), mask),
        real_part(per_head_linformer(q, k, v, mask, core.key_proj), mask),
        atol=1e-5,
        rtol=1e-5,
    )


def test_linformer_default_layout_and_init_std():
    core = build("linformer", 512, proj_dim=64)
    assert {name: p.shape for name, p in core.named_parameters()} == {
        "key_proj": (512, 64), "value_proj": (512, 64)
    }  # fmt: skip
    assert abs(core.key_proj.std().item() - 64**-0.5) < 0.01  # N(0, 1/proj_dim)
    assert abs(build("linformer", 512, proj_dim=64, init_std=0.5).value_proj.std().item() - 0.5) < 0.01
    separate = build("linformer", 32, proj_dim=8, per_head=True)
    assert {name: p.shape for name, p in separate.named_parameters()} == {
        "key_proj": (HEADS, 32, 8), "value_proj": (HEADS, 32, 8)
    }  # fmt: skip


def linformer_classifier(**options) -> LRAClassifier:
    torch.manual_seed(0)
    factory = partial(attention_zoo.build_attention, "linformer", proj_dim=8, **options)
    return LRAClassifier(vocab_size=10, num_classes=2, seq_len=32, attention=factory, dim=32, depth=3)


def projections(model: LRAClassifier) -> list[torch.nn.Parameter]:
    return [block.attention.core.key_proj for block in model.encoder.blocks]


def test_linformer_share_layers_is_one_parameter_for_every_layer_of_the_model():
    shared = linformer_classifier(**PAPER_LAYOUTS["nystromformer"])
    first, *later = projections(shared)
    assert all(p is first for p in later)
    assert sum(p is first for p in shared.parameters()) == 1  # counted once
    per_layer = linformer_classifier(**PAPER_LAYOUTS["skyformer"])
    assert len({id(p) for p in projections(per_layer)}) == 3
    count = [sum(p.numel() for p in model.parameters()) for model in (per_layer, shared)]
    assert count[0] - count[1] == 2 * first.numel()  # two of the three matrices are gone

    tokens, lengths = torch.randint(1, 10, (2, 32)), torch.tensor([32, 20])
    shared(tokens, lengths).sum().backward()
    assert first.grad is not None and first.grad.abs().sum() > 0
    reloaded = linformer_classifier(**PAPER_LAYOUTS["nystromformer"])
    reloaded.load_state_dict(shared.state_dict())
    assert all(p is projections(reloaded)[0] for p in projections(reloaded))
    torch.testing.assert_close(projections(reloaded)[0], first)


def test_tie_layers_leaves_cores_without_a_cross_layer_option_alone():
    cores = [build("linformer", 16, proj_dim=4) for _ in range(2)]
    before = [dict(core.named_parameters()) for core in cores]
    attention_zoo.tie_layers(cores)
    assert [dict(core.named_parameters()) for core in cores] == before
    attention_zoo.tie_layers([build("nystrom", 16), build("nystrom", 16)])  # no tie_to: nothing to do


def test_linformer_projections_are_trained():
    seq = 48
    core = build("linformer", seq, proj_dim=8)
    params = dict(core.named_parameters())
    assert set(params) == {"key_proj", "value_proj"}
    assert all(p.shape == (seq, 8) and p.requires_grad for p in params.values())
    q, k, v, mask = make_inputs(2, seq, [48, 30])
    real_part(core(q, k, v, mask), mask).square().sum().backward()
    for name, p in params.items():
        assert p.grad is not None and p.grad.abs().sum() > 0, name


def test_linformer_with_identity_projections_is_exact_softmax():
    seq = 32
    core = build("linformer", seq, proj_dim=seq)
    with torch.no_grad():
        core.key_proj.copy_(torch.eye(seq))
        core.value_proj.copy_(torch.eye(seq))
    q, k, v, _ = make_inputs(3, seq, [seq] * 3)
    exact = build("standard", seq)(q, k, v, None)
    torch.testing.assert_close(core(q, k, v, None), exact, atol=1e-5, rtol=1e-5)


def test_linformer_shorter_input_equals_padded_input_and_longer_raises():
    seq, short = 64, 40
    core = build("linformer", seq, proj_dim=16)
    q, k, v, mask = make_inputs(2, seq, [short, short])
    out_short = core(q[:, :, :short], k[:, :, :short], v[:, :, :short], None)
    out_padded = core(q, k, v, mask)[:, :, :short]
    torch.testing.assert_close(out_short, out_padded, atol=1e-5, rtol=1e-5)
    longer = torch.randn(1, HEADS, seq + 1, HEAD_DIM)
    with pytest.raises(ValueError, match="seq_len=64"):
        core(longer, longer, longer, None)


# --- reformer ---------------------------------------------------------------------------------


def shared_qk_attention_without_self(q, k, v, mask):
    """Exact softmax attention with shared QK (s = q + k, keys ŝ = s/‖s‖), self excluded."""
    shared = q + k
    scores = shared @ F.normalize(shared, dim=-1).transpose(-1, -2) / HEAD_DIM**0.5
    eye = torch.eye(q.shape[2], dtype=torch.bool)
    scores = scores.masked_fill(eye | ~mask[:, None, None, :], float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


@pytest.mark.parametrize("chunk_size", [50, 128])
def test_reformer_single_chunk_is_exact_shared_qk_attention(chunk_size):
    seq = 50
    core = build("reformer", seq, n_hashes=1, chunk_size=chunk_size)
    q, k, v, mask = make_inputs(2, seq, [50, 23])
    torch.manual_seed(3)
    out = core(q, k, v, mask)
    exact = shared_qk_attention_without_self(q, k, v, mask)
    torch.testing.assert_close(real_part(out, mask), real_part(exact, mask), atol=1e-5, rtol=1e-5)


def test_reformer_rounds_combine_as_one_softmax_over_every_rounds_window():
    """Several hash rounds = softmax over the keys of all rounds' windows, a key counted once per round."""
    seq, chunk, rounds = 70, 16, 3
    core = build("reformer", seq, n_hashes=rounds, chunk_size=chunk)
    q, k, v, mask = make_inputs(2, seq, [70, 45])
    torch.manual_seed(10)
    rotations = core.draw_rotations(seq)
    torch.manual_seed(10)
    out = core(q, k, v, mask)

    padded = F.pad(mask, (0, 80 - seq), value=False)  # internal padding to a multiple of the chunk size
    order = sort_by_bucket(lsh_buckets(F.pad(q + k, (0, 0, 0, 80 - seq)), padded, rotations))
    chunk_of = order.argsort(dim=-1)[..., :seq] // chunk  # (B, H, rounds, N): chunk of each position
    gap = chunk_of[..., :, None] - chunk_of[..., None, :]  # query chunk − key chunk
    counts = ((gap == 0) | (gap == 1)).sum(dim=2)  # (B, H, N, N): rounds in which i sees j
    shared = q + k
    scores = shared @ F.normalize(shared, dim=-1).transpose(-1, -2) / HEAD_DIM**0.5 + counts.log()
    scores = scores.masked_fill(torch.eye(seq, dtype=torch.bool) | ~mask[:, None, None, :], float("-inf"))
    expected = torch.softmax(scores, dim=-1) @ v
    assert (counts < rounds).any()  # the windows really differ between rounds
    real_rows = mask[:, None, :].expand(-1, HEADS, -1)  # padded query rows of `expected` are NaN
    torch.testing.assert_close(out[real_rows], expected[real_rows], atol=1e-5, rtol=1e-5)


def test_reformer_lone_token_attends_to_itself():
    core = build("reformer", 20, n_hashes=2, chunk_size=8)
    q, k, v, mask = make_inputs(1, 20, [1])
    torch.manual_seed(4)
    out = core(q, k, v, mask)
    torch.testing.assert_close(out[:, :, 0], v[:, :, 0])


def test_reformer_padding_does_not_move_real_tokens_between_chunks():
    seq, length = 96, 57
    q, k, _, mask = make_inputs(1, seq, [length])
    noise = 100 * torch.randn(1, HEADS, seq, HEAD_DIM, generator=torch.Generator().manual_seed(9))
    pad = (~mask)[:, None, :, None]
    torch.manual_seed(6)
    rotations = torch.randn(HEADS, 3, HEAD_DIM, 6)  # 3 rounds, 12 buckets
    buckets_a = lsh_buckets(q + k, mask, rotations)
    buckets_b = lsh_buckets(torch.where(pad, noise, q + k), mask, rotations)
    assert torch.equal(buckets_a[..., :length], buckets_b[..., :length])
    assert (buckets_a[..., length:] == 12).all() and (buckets_a[..., :length] < 12).all()
    order_a, order_b = sort_by_bucket(buckets_a), sort_by_bucket(buckets_b)
    assert torch.equal(order_a, order_b)
    assert (order_a[..., :length] < length).all()  # real tokens fill the first sorted slots


def test_reformer_four_hashes_finite_and_batch_independent():
    seq = 150  # not a multiple of the chunk size
    core = build("reformer", seq, n_hashes=4, chunk_size=32)
    q, k, v, mask = make_inputs(3, seq, [150, 101, 2])
    torch.manual_seed(7)
    batched = core(q, k, v, mask)
    assert torch.isfinite(batched).all()
    for i in range(3):
        torch.manual_seed(7)
        alone = core(q[i : i + 1], k[i : i + 1], v[i : i + 1], mask[i : i + 1])
        torch.testing.assert_close(
            real_part(alone, mask[i : i + 1]),
            real_part(batched[i : i + 1], mask[i : i + 1]),
            atol=1e-5,
            rtol=1e-5,
        )


# --- all three --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["linformer", "performer", "reformer"])
def test_gradients_finite_with_a_fully_padded_row(name):
    seq = 40
    core = build(name, seq)
    q, k, v, mask = make_inputs(2, seq, [40, 0])
    for t in (q, k, v):
        t.requires_grad_(True)
    torch.manual_seed(8)
    core(q, k, v, mask).square().sum().backward()
    for t in (q, k, v):
        assert torch.isfinite(t.grad).all()


@pytest.mark.parametrize(
    ("name", "option", "value"),
    [
        ("linformer", "proj_dim", 0),
        ("linformer", "proj_dim", 2.5),
        ("performer", "num_features", 0),
        ("reformer", "n_hashes", 0),
        ("reformer", "chunk_size", -1),
    ],
)
def test_invalid_options_name_the_option_and_valid_range(name, option, value):
    with pytest.raises(ValueError, match=f"{option} must be an integer >= 1"):
        build(name, 32, **{option: value})


def test_registry_entries():
    assert attention_zoo.spec("linformer").budget_option == "proj_dim"
    assert attention_zoo.spec("performer").budget_option == "num_features"
    assert attention_zoo.spec("reformer").options == {"n_hashes": 2, "chunk_size": 64}
    for name in ("linformer", "performer", "reformer"):
        assert attention_zoo.spec(name).approximates == "standard"


@pytest.mark.parametrize(
    ("name", "option", "value", "valid"),
    [
        ("linformer", "per_head", 1, r"a boolean \(true or false\)"),
        ("linformer", "share_layers", "yes", r"a boolean \(true or false\)"),
        ("linformer", "init_std", 0.0, "a number > 0 or null"),
        ("performer", "temperature", "sqrt(d)", "one of 'sqrt_d', 'd'"),
        ("performer", "feature_epsilon", -1e-4, "a number >= 0"),
        ("standard", "attention_dropout", 1.0, r"a number in \[0, 1\)"),
        ("kernelized", "attention_dropout", -0.1, r"a number in \[0, 1\)"),
    ],
)
def test_new_options_are_validated_by_the_registry(name, option, value, valid):
    with pytest.raises(ValueError, match=rf"{option} must be {valid}, got"):
        build(name, 32, **{option: value})


def test_paper_options_are_declared_with_todays_behaviour_as_default():
    assert attention_zoo.spec("linformer").options == {
        "proj_dim": 256, "per_head": False, "share_kv": False, "share_layers": False, "init_std": None
    }  # fmt: skip
    assert attention_zoo.spec("performer").options == {
        "num_features": 256, "temperature": "sqrt_d", "feature_epsilon": 0.0
    }  # fmt: skip
    for name in ("standard", "kernelized"):
        assert attention_zoo.spec(name).options == {"attention_dropout": 0.0}
