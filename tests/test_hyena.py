"""Hyena (``attention_zoo.mixers.hyena``) against Zoology's module, ``zoology/mixers/hyena.py``, re-stated
here from its formulas (its code is not a dependency): the initialisation of the implicit filter, the
forward pass through ``fftconv_ref`` (with ``k_rev`` for the two-sided form), outputs and gradients; and
the long convolution by FFT against the convolution computed output by output."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import attention_zoo
from attention_zoo.parts.long_conv import fft_convolution, stepwise_convolution

DIM, SEQ = 6, 40


def build(**options) -> nn.Module:
    torch.manual_seed(0)
    return attention_zoo.build_attention("hyena", dim=DIM, seq_len=SEQ, **options)


def zoology_positional_embedding(emb_dim: int, seq_len: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Zoology's ``PositionalEmbedding.__init__`` (hyena.py:65-83): z (1, L, emb_dim), t (1, L, 1)."""
    t = torch.linspace(0, 1, seq_len)[None, :, None]
    bands = (emb_dim - 1) // 2
    t_rescaled = torch.linspace(0, seq_len - 1, seq_len)[None, :, None]
    w = 2 * math.pi * t_rescaled / seq_len
    f = torch.linspace(1e-4, bands - 1, bands)[None, None]
    z = torch.exp(-1j * f * w)
    return torch.cat([t, z.real, z.imag], dim=-1), t


def zoology_deltas(d_model: int, fast_decay_pct=0.3, slow_decay_pct=1.5, target=1e-2) -> torch.Tensor:
    """Zoology's ``ExponentialModulation.__init__`` (hyena.py:100-105): (1, 1, d_model)."""
    max_decay, min_decay = math.log(target) / fast_decay_pct, math.log(target) / slow_decay_pct
    return torch.linspace(min_decay, max_decay, d_model)[None, None]


def zoology_filter(implicit: nn.Module, length: int) -> torch.Tensor:
    """Zoology's ``Filter.filter`` (hyena.py:187-196) with this filter's weights: (d_model, L). The MLP
    alternates ``Linear`` and one shared ``Sin`` (sin(freq · x)), and its last ``Linear`` has no bias."""
    z, t = implicit.z[None, :length], zoology_positional_embedding(3, SEQ)[1][:, :length]
    linears = [layer for layer in implicit.mlp if isinstance(layer, nn.Linear)]
    freq = next(layer for layer in implicit.mlp if not isinstance(layer, nn.Linear)).freq
    h = z
    for linear in linears[:-1]:
        h = torch.sin(freq * F.linear(h, linear.weight, linear.bias))
    h = F.linear(h, linears[-1].weight)  # (1, L, d_model)
    h = h * torch.exp(-t * zoology_deltas(h.shape[-1]).abs())  # ExponentialModulation.forward
    return h[0].T  # "c l d -> c d l", [0]


def fftconv_ref(u, k, D, k_rev=None):
    """Zoology's ``fftconv_ref`` (hyena.py:29-48) with ``gelu=False`` and no dropout mask."""
    seqlen = u.shape[-1]
    fft_size = 2 * seqlen
    k_f = torch.fft.rfft(k, n=fft_size) / fft_size
    if k_rev is not None:
        k_rev_f = torch.fft.rfft(k_rev, n=fft_size) / fft_size
        k_f = k_f + k_rev_f.conj()
    u_f = torch.fft.rfft(u.to(dtype=k.dtype), n=fft_size)
    if len(u.shape) > 3:
        k_f = k_f.unsqueeze(1)
    y = torch.fft.irfft(u_f * k_f, n=fft_size, norm="forward")[..., :seqlen]
    return (y + u * D.unsqueeze(-1)).to(dtype=u.dtype)


def zoology_hyena(mixer: nn.Module, u: torch.Tensor) -> torch.Tensor:
    """Zoology's ``Hyena.forward`` (hyena.py:303-358), one head and one block: u (b, l, d) -> (b, l, d)."""
    length = u.shape[1]
    u = mixer.in_proj(u).transpose(1, 2)  # "b l d -> b d l"
    order = mixer.short_filter.kernel_size[0]
    weight, bias = mixer.short_filter.weight, mixer.short_filter.bias
    uc = F.conv1d(u, weight, bias, padding=order - 1, groups=3 * DIM)[..., :length]
    uc = uc[:, None, :, None, :]  # "b (ho v) (z l) -> b ho v z l", ho = z = 1
    x1, x2, v = uc.split(DIM, dim=2)
    v = v * x1
    k = zoology_filter(mixer.filters[0], length)
    k_rev = zoology_filter(mixer.filters[1], length) if len(mixer.filters) == 2 else None
    v = fftconv_ref(v, k, mixer.bias[None, :, None], k_rev=k_rev)
    y = (v * x2)[:, 0, :, 0, :].transpose(1, 2)  # "b h v z l -> b (z l) (h v)"
    return mixer.out_proj(y)


def test_the_implicit_filter_starts_as_zoologys():
    mixer = build(emb_dim=5, bidirectional=False)
    implicit = mixer.filters[0]
    z, t = zoology_positional_embedding(5, SEQ)
    torch.testing.assert_close(implicit.z.detach(), z[0])
    torch.testing.assert_close(implicit.t, t[0])
    torch.testing.assert_close(implicit.deltas, zoology_deltas(DIM)[0, 0])
    sines = {id(layer) for layer in implicit.mlp if not isinstance(layer, nn.Linear)}
    assert len(sines) == 1 and (implicit.mlp[1].freq == 1.0).all()  # one Sin, frequency w
    assert implicit.mlp[-1].bias is None and len(implicit.mlp) == 2 * (1 + 2) + 1
    assert implicit.z._optim == {"weight_decay": 0.0, "lr": 1e-5}
    assert all(p._optim == {"weight_decay": 0.0, "lr": 1e-3} for p in implicit.mlp.parameters())


@pytest.mark.parametrize("bidirectional", [False, True], ids=["causal", "two-sided"])
def test_hyena_is_zoologys_hyena(bidirectional):
    """Outputs and the gradients of every input and weight; the two-sided form is ``fftconv_ref``'s
    ``k_rev`` (lag 0 from both filters)."""
    mixer = build(bidirectional=bidirectional)
    with torch.no_grad():  # trained-looking filters: no output is near zero by chance
        for parameter in mixer.parameters():
            parameter.add_(0.1 * torch.randn_like(parameter))
    u = torch.randn(2, 33, DIM, generator=torch.Generator().manual_seed(1), requires_grad=True)
    weights = torch.randn(2, 33, DIM, generator=torch.Generator().manual_seed(2))
    leaves = [u, *mixer.parameters()]
    ours = [mixer(u), *torch.autograd.grad((mixer(u) * weights).sum(), leaves)]
    theirs = [
        zoology_hyena(mixer, u),
        *torch.autograd.grad((zoology_hyena(mixer, u) * weights).sum(), leaves),
    ]
    for index, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        error = (a - b).abs().max() / b.abs().max()
        assert error <= 1e-5, f"tensor {index}: relative error {error:.2e}"


@pytest.mark.parametrize("bidirectional", [False, True], ids=["causal", "two-sided"])
def test_filter_len_keeps_the_first_taps_of_the_whole_filter(bidirectional):
    whole, short = (
        build(bidirectional=bidirectional).kernel(SEQ),
        build(bidirectional=bidirectional, filter_len=5),
    )
    lags = torch.arange(whole.shape[-1])
    kept = (lags < 5) | (lags > whole.shape[-1] - 5) if bidirectional else lags < 5
    torch.testing.assert_close(short.kernel(SEQ), whole * kept)


@pytest.mark.parametrize("two_sided", [False, True])
def test_the_fft_convolution_is_the_convolution_output_by_output(two_sided):
    generator = torch.Generator().manual_seed(0)
    u = torch.randn(2, 3, 37, generator=generator)
    kernel = torch.randn(3, 74 if two_sided else 37, generator=generator)
    torch.testing.assert_close(
        fft_convolution(u, kernel), stepwise_convolution(u, kernel), atol=1e-5, rtol=1e-5
    )


def test_a_sequence_longer_than_the_filter_is_refused_in_one_line():
    with pytest.raises(ValueError, match=r"^attention 'hyena': 41 tokens exceed its filter's seq_len 40$"):
        build()(torch.randn(1, 41, DIM))
