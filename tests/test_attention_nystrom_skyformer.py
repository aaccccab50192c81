"""Convergence and exactness checks of the landmark cores: the iterative pseudo-inverse (Lemma 1 of
Nyströmformer), Nyström reproducing softmax attention when landmarks cover every distinct point
(Lemma 2), Skyformer approaching kernelized attention as landmarks grow, kernelized attention
against a dense formula, and option validation.
"""

from __future__ import annotations

from itertools import pairwise

import pytest
import torch
import torch.nn.functional as F

import attention_zoo
from attention_zoo.cores.landmarks import padded_landmarks, segment_means
from attention_zoo.cores.pinv import iterative_pinv
from attention_zoo.cores.skyformer import sample_landmark_rows

HEADS, HEAD_DIM = 2, 16


def randn(*shape: int, seed: int, scale: float = 1.0) -> torch.Tensor:
    return scale * torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def relative_error(approx: torch.Tensor, exact: torch.Tensor) -> torch.Tensor:
    """Frobenius relative error per (batch, head) matrix: (B, H, N, D) -> (B, H)."""
    return (approx - exact).norm(dim=(-2, -1)) / exact.norm(dim=(-2, -1))


def core(name: str, seq: int, **options):
    return attention_zoo.build_attention(name, head_dim=HEAD_DIM, num_heads=HEADS, seq_len=seq, **options)


# --- Lemma 1: the iterative pseudo-inverse -------------------------------------------------------


def pinv_errors(iterations: tuple[int, ...]) -> list[float]:
    """Worst relative error to torch.linalg.pinv over 4 softmax matrices (32 x 32), per iteration count."""
    matrices = torch.softmax(randn(4, 32, 32, seed=0), dim=-1)
    exact = torch.linalg.pinv(matrices.double())
    return [
        relative_error(iterative_pinv(matrices, n).double()[None], exact[None]).max().item()
        for n in iterations
    ]


def test_iterative_pinv_converges_to_pinv_on_softmax_matrices():
    errors = pinv_errors((1, 8, 14, 16, 20))
    assert all(later < earlier for earlier, later in pairwise(errors)), errors
    assert errors[-1] < 1e-4, errors


def test_iterative_pinv_scales_each_matrix_on_its_own():
    small = torch.softmax(randn(16, 16, seed=1), dim=-1)
    large = 100 * torch.softmax(randn(16, 16, seed=2), dim=-1)
    batch = iterative_pinv(torch.stack([small, large, torch.zeros(16, 16)]), 6)
    torch.testing.assert_close(batch[0], iterative_pinv(small, 6))
    torch.testing.assert_close(batch[1], iterative_pinv(large, 6))
    assert torch.equal(batch[2], torch.zeros(16, 16))


def test_iterative_pinv_computes_in_float32_under_autocast():
    matrix = torch.softmax(randn(2, 8, 8, seed=3), dim=-1)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        inverse = iterative_pinv(matrix.bfloat16(), 20)
    assert inverse.dtype == torch.float32
    torch.testing.assert_close(inverse, torch.linalg.pinv(matrix), atol=0.05, rtol=0.05)


# --- Nyström ---------------------------------------------------------------------------------------


def test_segment_means_use_near_equal_segments():
    x = torch.arange(10.0)[:, None]  # segments of 10 positions into 4: sizes 3, 2, 3, 2
    torch.testing.assert_close(segment_means(x, 4), torch.tensor([[1.0], [3.5], [6.0], [8.5]]))


@pytest.mark.parametrize(("n", "count"), [(4096, 64), (4000, 64), (61, 8), (10, 4), (7, 7), (5, 1)])
def test_segment_means_average_positions_ceil_i_n_over_m_to_ceil_next_minus_one(n, count):
    x = randn(2, HEADS, n, 3, seed=n)
    averaging = torch.zeros(count, n)  # row i: 1/size on positions ⌈i·n/m⌉ … ⌈(i+1)·n/m⌉ − 1
    for i in range(count):
        start, end = -(-i * n // count), -(-(i + 1) * n // count)
        averaging[i, start:end] = 1 / (end - start)
    x.requires_grad_(True)
    means = segment_means(x, count)
    torch.testing.assert_close(means, averaging @ x.detach())
    weights = randn(count, 3, seed=1)
    (means * weights).sum().backward()
    torch.testing.assert_close(x.grad, (averaging.T @ weights).expand_as(x))


@pytest.mark.parametrize(("n", "count"), [(12, 4), (11, 4)])
@pytest.mark.parametrize("lengths", [None, (12, 5)])
def test_padded_landmarks_backward_is_the_gradient_of_masking_then_averaging(n, count, lengths):
    """The hand-written backward of padded_landmarks against torch.autograd.gradcheck, in float64."""
    x = torch.randn(2, 2, n, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(n))
    mask = None if lengths is None else torch.arange(n)[None, :] < torch.tensor(lengths)[:, None]
    zeroed, means = padded_landmarks(x, mask, count)
    expected = x if mask is None else x * mask[:, None, :, None]
    assert zeroed.is_contiguous()
    torch.testing.assert_close(zeroed, expected)
    torch.testing.assert_close(means, segment_means(expected, count))
    assert torch.autograd.gradcheck(
        lambda t: padded_landmarks(t, mask, count),
        x.permute(0, 2, 1, 3).contiguous().permute(0, 2, 1, 3).requires_grad_(),
    )


def nystrom_vs_standard(
    q, k, v, num_landmarks: int, pinv_iterations: int
) -> tuple[torch.Tensor, torch.Tensor]:
    seq = q.shape[2]
    nystrom = core(
        "nystrom", seq, num_landmarks=num_landmarks, pinv_iterations=pinv_iterations, conv_kernel_size=None
    )
    return nystrom(q, k, v, None), core("standard", seq)(q, k, v, None)


def test_nystrom_is_exact_when_every_position_is_a_landmark():
    q, k, v = (randn(2, HEADS, 48, HEAD_DIM, seed=s) for s in (10, 11, 12))
    approx, exact = nystrom_vs_standard(q, k, v, num_landmarks=48, pinv_iterations=30)
    torch.testing.assert_close(approx, exact, atol=2e-4, rtol=1e-3)


@pytest.mark.parametrize("seq", [64, 61])  # segments of equal size, and of sizes 7 and 8
def test_nystrom_is_exact_when_landmarks_cover_every_distinct_point(seq):
    count = 8
    segment = torch.arange(seq) * count // seq  # the segments Nyström averages over
    q = randn(2, HEADS, count, HEAD_DIM, seed=20)[:, :, segment]
    k = randn(2, HEADS, count, HEAD_DIM, seed=21)[:, :, segment]
    v = randn(2, HEADS, seq, HEAD_DIM, seed=22)
    approx, exact = nystrom_vs_standard(q, k, v, num_landmarks=count, pinv_iterations=30)
    torch.testing.assert_close(approx, exact, atol=2e-5, rtol=1e-4)


def test_nystrom_has_no_exact_softmax_shortcut():
    q, k, v = (randn(2, HEADS, 48, HEAD_DIM, seed=s) for s in (10, 11, 12))
    approx, exact = nystrom_vs_standard(q, k, v, num_landmarks=48, pinv_iterations=1)
    assert relative_error(approx, exact).min() > 0.1


def test_nystrom_uses_one_landmark_per_position_when_sequence_is_short():
    q, k, v = (randn(2, HEADS, 10, HEAD_DIM, seed=s) for s in (30, 31, 32))
    default = core("nystrom", 10, conv_kernel_size=None)(q, k, v, None)
    ten = core("nystrom", 10, num_landmarks=10, conv_kernel_size=None)(q, k, v, None)
    torch.testing.assert_close(default, ten, atol=0, rtol=0)


@pytest.mark.parametrize("layout", ["contiguous", "from_fused_projection"])
def test_nystrom_conv_skip_is_the_conv2d_module_over_the_sequence(layout):
    """The channels-last computation is the (k, 1)-kernel, groups=H Conv2d that holds the weights."""
    batch, seq = 2, 50
    nystrom = core("nystrom", seq, conv_kernel_size=7)
    v = randn(batch, seq, 3, HEADS, HEAD_DIM, seed=43).permute(2, 0, 3, 1, 4)[2]  # as the wrapper's v
    if layout == "contiguous":
        v = v.contiguous()
    torch.testing.assert_close(nystrom._conv_skip(v), nystrom.conv(v))


def test_nystrom_conv_skip_is_a_depthwise_conv_over_the_sequence_of_padded_v():
    seq = 12
    q, k, v = (randn(2, HEADS, seq, HEAD_DIM, seed=s) for s in (40, 41, 42))
    mask = torch.arange(seq)[None, :] < torch.tensor([[12], [7]])
    with_conv = core("nystrom", seq, num_landmarks=4, conv_kernel_size=3)
    without = core("nystrom", seq, num_landmarks=4, conv_kernel_size=None)
    with torch.no_grad():
        with_conv.conv.weight.zero_()
        with_conv.conv.weight[0, 0, 2, 0] = 1.0  # head 0: position i reads v at i + 1
        with_conv.conv.weight[1, 0, 1, 0] = 2.0  # head 1: twice v at i
    v_real = v * mask[:, None, :, None]
    expected = torch.stack([F.pad(v_real[:, 0, 1:], (0, 0, 0, 1)), 2 * v_real[:, 1]], dim=1)
    torch.testing.assert_close(with_conv(q, k, v, mask) - without(q, k, v, mask), expected)


# --- kernelized and Skyformer -----------------------------------------------------------------------


def dense_gaussian_attention(q, k, v, mask):
    """κ(Q/p^¼, K/p^¼) V written out pair by pair; padded keys excluded."""
    squared = (q[:, :, :, None, :] - k[:, :, None, :, :]).square().sum(dim=-1) / HEAD_DIM**0.5
    weights = torch.exp(-squared / 2) * mask[:, None, None, :]
    return weights @ v


def test_kernelized_equals_the_dense_formula():
    q, k, v = (randn(2, HEADS, 40, HEAD_DIM, seed=s) for s in (50, 51, 52))
    mask = torch.arange(40)[None, :] < torch.tensor([[40], [23]])
    out = core("kernelized", 40)(q, k, v, mask)
    real = mask[:, None, :, None]
    torch.testing.assert_close(out * real, dense_gaussian_attention(q, k, v, mask) * real)


@pytest.mark.parametrize("scale", [10.0, 1e4])
def test_kernelized_weights_stay_in_zero_one_for_large_norms(scale):
    q, k = (randn(1, HEADS, 20, HEAD_DIM, seed=s, scale=scale) for s in (53, 54))
    v = randn(1, HEADS, 20, HEAD_DIM, seed=55)
    k[:, :, 3] = q[:, :, 3]  # one pair at distance zero, every other pair far apart
    out = core("kernelized", 20)(q, k, v, None)
    assert torch.isfinite(out).all()
    assert (out.abs() <= v.abs().sum(dim=2, keepdim=True)).all()  # every weight in [0, 1]
    if scale == 10.0:  # at 1e4 float32 cancellation in ‖x‖² + ‖y‖² − 2x·y blurs the zero distance
        torch.testing.assert_close(out[:, :, 3], v[:, :, 3], atol=1e-5, rtol=1e-3)


def test_landmark_rows_are_real_rows_and_fill_up_to_the_budget():
    torch.manual_seed(0)
    mask = torch.arange(10)[None, :] < torch.tensor([[10], [3], [0]])
    index, valid = sample_landmark_rows(mask, 8)
    assert valid.sum(dim=-1).tolist() == [8, 6, 0]
    rows_real = torch.cat([mask, mask], dim=1).gather(1, index)
    assert torch.equal(rows_real, valid)
    assert all(len(set(row.tolist())) == 8 for row in index)  # without replacement


def skyformer_errors(budgets: tuple[int, ...], seeds: tuple[int, ...] = (0, 1, 2), **options) -> list[float]:
    """Mean relative error of skyformer to kernelized (128 tokens, no padding), per landmark budget."""
    seq = 128
    errors = []
    for budget in budgets:
        per_seed = []
        for seed in seeds:
            q, k, v = (randn(2, HEADS, seq, HEAD_DIM, seed=100 * seed + i) for i in range(3))
            torch.manual_seed(seed)
            approx = core("skyformer", seq, num_landmarks=budget, **options)(q, k, v, None)
            per_seed.append(relative_error(approx, core("kernelized", seq)(q, k, v, None)).mean())
        errors.append(torch.stack(per_seed).mean().item())
    return errors


def test_skyformer_error_to_kernelized_falls_as_landmarks_grow():
    errors = skyformer_errors((8, 32, 128, 256))  # 256 = every row of [Q; K]
    assert all(later < earlier for earlier, later in pairwise(errors)), errors
    assert errors[-1] < 0.1, errors


def test_skyformer_with_every_row_and_small_ridge_is_close_to_kernelized():
    (error,) = skyformer_errors((256,), seeds=(0,), ridge=1e-2, pinv_iterations=20)
    assert error < 1e-3


def test_skyformer_with_every_real_row_is_close_on_padded_sequences():
    seq = 64
    q, k, v = (randn(2, HEADS, seq, HEAD_DIM, seed=s) for s in (60, 61, 62))
    mask = torch.arange(seq)[None, :] < torch.tensor([[64], [29]])
    torch.manual_seed(0)
    approx = core("skyformer", seq, num_landmarks=2 * seq, ridge=1e-3, pinv_iterations=40)(q, k, v, mask)
    real = mask[:, None, :, None]
    exact = core("kernelized", seq)(q, k, v, mask)
    assert relative_error(approx * real, exact * real).max() < 1e-3


# --- option validation --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, option, value",
    [
        ("nystrom", "num_landmarks", 0),
        ("nystrom", "pinv_iterations", 0),
        ("nystrom", "conv_kernel_size", 4),
        ("nystrom", "conv_kernel_size", -3),
        ("skyformer", "num_landmarks", 0),
        ("skyformer", "pinv_iterations", 2.5),
        ("skyformer", "ridge", 0.0),
    ],
)
def test_invalid_options_name_the_option_and_its_range(name, option, value):
    with pytest.raises(ValueError, match=rf"{option} must be .*(>= 1|> 0)"):
        core(name, 16, **{option: value})
