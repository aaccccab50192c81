"""Long convolutions, as the state-space and Hyena mixers apply them: by FFT for training, and step by
step for the tests.

A kernel of length L holds lags 0..L-1 (causal); one of length 2L adds lags -L..-1 after them (two-sided:
position 2L - j holds lag -j), the layout in which one FFT of size 2L applies both sides, with nothing
wrapping around since the inputs are zero-padded to 2L.
"""

from __future__ import annotations

import torch


def fft_convolution(u: torch.Tensor, kernel: torch.Tensor) -> torch.Tensor:
    """y_t = Σ_s K[t - s] u_s, by FFT of size 2L: u (B, C, L), kernel (C, L) or (C, 2L) (module
    docstring) -> (B, C, L). Memory and time O(L log L)."""
    length = u.shape[-1]
    k_f = torch.fft.rfft(kernel, n=2 * length)  # (C, L + 1)
    u_f = torch.fft.rfft(u, n=2 * length)  # (B, C, L + 1)
    return torch.fft.irfft(u_f * k_f, n=2 * length)[..., :length]  # (B, C, L)


def stepwise_convolution(u: torch.Tensor, kernel: torch.Tensor) -> torch.Tensor:
    """``fft_convolution`` one output at a time, each a sum over the inputs its lags reach (for the
    tests): shapes as there."""
    length = u.shape[-1]
    lags = torch.arange(length, device=u.device)
    outputs = []
    for t in range(length):
        taps = kernel[:, (t - lags) % kernel.shape[-1]]  # K[t - s] for every s: (C, L)
        if kernel.shape[-1] == length:
            taps = taps * (lags <= t)  # causal: no lag below 0
        outputs.append((taps * u).sum(-1))  # (B, C)
    return torch.stack(outputs, dim=-1)  # (B, C, L)
