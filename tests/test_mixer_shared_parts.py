"""The parts the recurrent mixers share: the short causal convolution (``short_conv``), the two
directions and their padding rule (``directions``), and the ``kernel=auto|fla|torch`` choice
(``fla_kernels``)."""

from __future__ import annotations

import sys

import pytest
import torch

from attention_zoo.parts.directions import both_ways, zeroed_at_padding
from attention_zoo.parts.fla_kernels import check_kernel, runs_fla
from attention_zoo.parts.short_conv import ShortConvolution

LENGTHS = [12, 7, 1]


def padded(seq: int = 12, channels: int = 3, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.randn(len(LENGTHS), seq, channels, generator=torch.Generator().manual_seed(seed))
    return x, torch.arange(seq)[None, :] < torch.tensor(LENGTHS)[:, None]


def test_the_short_convolution_is_causal_and_tap_by_tap():
    torch.manual_seed(0)
    conv = ShortConvolution(3, 4)
    u = torch.randn(2, 10, 3)
    taps, zeros = conv.weight[:, 0], torch.zeros(2, 3, 3)  # (E, 4); 3 zeros before the first position
    padded_u = torch.cat([zeros, u], dim=1)
    expected = conv.bias + sum(taps[:, j] * padded_u[:, j : j + 10] for j in range(4))
    torch.testing.assert_close(conv(u), expected, atol=1e-6, rtol=1e-6)
    later = u.clone()
    later[:, 6:] += 1.0  # a change at position 6 reaches no earlier position
    torch.testing.assert_close(conv(later)[:, :6], conv(u)[:, :6], atol=0, rtol=0)
    assert set(conv.state_dict()) == {"weight", "bias"} and conv.weight.shape == (3, 1, 4)


def test_leading_zeros_leave_the_short_convolution_as_without_them():
    """What the reversed direction relies on: its sequence starts with zeroed padding."""
    torch.manual_seed(0)
    conv = ShortConvolution(3, 4, bias=False)
    u = torch.randn(1, 9, 3)
    with_zeros = conv(torch.cat([torch.zeros(1, 5, 3), u], dim=1))
    torch.testing.assert_close(with_zeros[:, 5:], conv(u), atol=1e-6, rtol=1e-6)


def running_sum(u: torch.Tensor, weights: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """A causal direction for the tests: each position's weighted sum of itself and all before it."""
    return (u * weights).cumsum(1)


def test_one_direction_is_the_callable_on_inputs_zeroed_at_padding():
    u, mask = padded()
    weights = torch.rand_like(u)
    out = both_ways([running_sum], [u, weights], mask)
    torch.testing.assert_close(out, running_sum(u * mask[..., None], weights, mask))


def test_the_backward_direction_is_each_sequence_reversed_within_its_own_length():
    u, mask = padded()
    weights = torch.rand_like(u)
    doubled = both_ways([running_sum, running_sum], [u, weights], mask)
    for i, length in enumerate(LENGTHS):
        real, w = u[i : i + 1, :length], weights[i : i + 1, :length]
        backward = running_sum(real.flip(1), w.flip(1), None).flip(1)
        expected = (running_sum(real, w, None) + backward) / 2
        torch.testing.assert_close(doubled[i : i + 1, :length], expected)


def test_padding_content_reaches_no_real_position_in_either_direction():
    u, mask = padded()
    weights = torch.rand_like(u)
    noise = torch.where(mask[..., None], u, 1e3 * torch.randn_like(u))
    directions = [running_sum, running_sum]
    real = mask[..., None]
    torch.testing.assert_close(
        both_ways(directions, [u, weights], mask) * real, both_ways(directions, [noise, weights], mask) * real
    )


def test_directions_are_one_or_two():
    u, mask = padded()
    with pytest.raises(ValueError, match=r"^a mixer runs one direction or two, got 3$"):
        both_ways([running_sum] * 3, [u, u], mask)
    assert zeroed_at_padding([u], None)[0] is u


def test_kernel_fla_without_fla_names_its_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "fla.ops", None)
    with pytest.raises(ValueError) as refused:
        check_kernel("gla", "fla")
    message = str(refused.value)
    assert message.startswith("attention 'gla': kernel=fla needs flash-linear-attention (")
    assert message.endswith('): pip install -e ".[fla]"') and "\n" not in message
    check_kernel("gla", "auto")  # auto and torch run anywhere
    check_kernel("gla", "torch")


def test_kernel_fla_without_a_gpu_is_one_line(monkeypatch):
    pytest.importorskip("fla.ops", reason='fla is not installed: pip install -e ".[fla]"')
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match=r"^attention 'gla': kernel=fla needs a CUDA GPU and none is"):
        check_kernel("gla", "fla")


def test_which_kernel_runs(monkeypatch):
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    assert not runs_fla("gla", "auto", cpu) and not runs_fla("gla", "torch", cuda)
    with pytest.raises(ValueError, match=r"^attention 'gla': kernel=fla runs on CUDA tensors, got cpu"):
        runs_fla("gla", "fla", cpu)
    assert runs_fla("gla", "fla", cuda)
    monkeypatch.setitem(sys.modules, "fla.ops", None)
    assert not runs_fla("gla", "auto", cuda)  # auto without fla: the PyTorch form, on any device


@pytest.mark.parametrize(
    ("capability", "triton_version", "runs"),
    [((9, 0), "3.6.0", False), ((9, 0), "3.7.1", True), ((8, 0), "3.6.0", True), ((9, 0), "3.3.1", True)],
)
def test_auto_leaves_fla_where_it_refuses_the_gpu(monkeypatch, capability, triton_version, runs):
    """fla 0.6 refuses its gated backward on Hopper with Triton 3.4.0 to 3.7.0 (its issue 640)."""
    triton = pytest.importorskip("triton")
    pytest.importorskip("fla.ops", reason='fla is not installed: pip install -e ".[fla]"')
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: capability)
    monkeypatch.setattr(triton, "__version__", triton_version)
    assert runs_fla("gla", "auto", torch.device("cuda")) is runs
    assert runs_fla("gla", "fla", torch.device("cuda"))  # asked for: fla's own error says why
