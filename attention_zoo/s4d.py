"""S4D (Gu, Gupta, Goel and Ré, NeurIPS 2022): the diagonal state-space layer of state-spaces/s4's
``models/s4/s4d.py``, as a mixer in place of multi-head attention.

Each of the ``dim`` channels is a diagonal SSM with ``d_state / 2`` complex modes (conjugate pairs, so
a state of ``d_state`` real numbers): ``A = -exp(log_A_real) + i·A_imag``, S4D-Lin (``A_imag = π n``)
or S4D-Inv (``A_imag = (N/π)(N/(2n+1) - 1)``), real part -1/2; a learned step ``dt = exp(log_dt)``
drawn log-uniformly in [dt_min, dt_max]; B = 1 and C complex. ZOH discretisation gives the kernel
``K_l = 2 Re(Σ_n C_n (exp(dt A_n) - 1) / A_n · exp(dt A_n l))`` (a Vandermonde product), applied as
an FFT convolution padded to 2L so that nothing wraps around; then the D skip, GELU, dropout and a
position-wise ``Conv1d(dim, 2·dim, 1)`` with GLU.

``bidirectional`` (the S4 repository's LRA configs): a second SSM per channel whose kernel runs over
the reversed sequence, and the two are summed into one two-sided kernel per channel, as the S4
repository's ``fftconv.py`` does (channels are summed, not split): ``y_t = Σ_{s<=t} K_{t-s} u_s +
Σ_{s>t} K'_{s-t-1} u_s`` (the reverse kernel starts one step ahead, as theirs does, so the D skip
alone carries ``u_t``). Padded positions are zeroed before the convolution, so they reach no real
position from either side; the reverse direction then equals the SSM run over each sequence reversed
within its own length.

``A`` and ``dt`` are trained at their own learning rate ``lr`` without weight decay, declared on
the parameters as ``_optim`` (the S4 repository's convention, read by ``lra.module``); C and D are
ordinary parameters, as in s4d.py.
"""

from __future__ import annotations

import math
from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

from attention_zoo.registry import EvenPositiveInt, PositiveFloat, Probability, register_mixer


def declare_optim(parameter: nn.Parameter, lr: float | None) -> None:
    """Train ``parameter`` without weight decay, at learning rate ``lr`` (None: the run's)."""
    parameter._optim = {"weight_decay": 0.0} | ({} if lr is None else {"lr": lr})


class S4DKernel(nn.Module):
    """The convolution kernels of ``channels`` diagonal SSMs: forward(L) -> (channels, L)."""

    def __init__(
        self, channels: int, d_state: int, init: str, dt_min: float, dt_max: float, lr: float | None
    ) -> None:
        super().__init__()
        modes = d_state // 2
        log_dt = torch.rand(channels) * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min)  # (H,)
        n = torch.arange(modes, dtype=torch.float32).expand(channels, modes)  # (H, N/2)
        A_imag = math.pi * n if init == "lin" else d_state / math.pi * (d_state / (2 * n + 1) - 1)
        self.C = nn.Parameter(
            torch.view_as_real(torch.randn(channels, modes, dtype=torch.cfloat))
        )  # (H, N/2, 2)
        self.log_dt = nn.Parameter(log_dt)
        self.log_A_real = nn.Parameter(torch.full((channels, modes), math.log(0.5)))  # (H, N/2)
        self.A_imag = nn.Parameter(A_imag.clone())  # (H, N/2)
        for parameter in (self.log_dt, self.log_A_real, self.A_imag):
            declare_optim(parameter, lr)

    def forward(self, length: int) -> torch.Tensor:
        dt = torch.exp(self.log_dt)  # (H,)
        C = torch.view_as_complex(self.C)  # (H, N/2)
        A = -torch.exp(self.log_A_real) + 1j * self.A_imag  # (H, N/2)
        dtA = A * dt[:, None]  # (H, N/2)
        C = C * (torch.exp(dtA) - 1.0) / A  # ZOH: C·B̄ with B = 1, (H, N/2)
        return 2 * vandermonde(C, dtA, length).real  # (H, L)


def vandermonde(C: torch.Tensor, dtA: torch.Tensor, length: int) -> torch.Tensor:
    """``K_l = Σ_n C_n exp(dtA_n l)`` for l < length, with lags split as ``l = Q i + j``
    (``Q ≈ √length``): ``exp(dtA Q i)`` and ``exp(dtA j)`` take √length exponentials per mode, and
    their product summed over the modes is one batched matrix product, instead of length
    exponentials per mode. C, dtA (H, N/2) complex -> (H, length) complex."""
    step = math.isqrt(length - 1) + 1  # Q: Q² >= length
    blocks = -(-length // step)  # ceil(length / Q)
    positions = torch.arange(max(step, blocks), device=dtA.device, dtype=dtA.real.dtype)
    inner = decayed_powers(dtA[..., None] * positions[:step])  # exp(dtA j): (H, N/2, Q)
    outer = decayed_powers(dtA[..., None] * (step * positions[:blocks]))  # exp(dtA Q i): (H, N/2, I)
    K = torch.matmul((C[..., None] * outer).transpose(1, 2), inner)  # (H, I, Q)
    return K.flatten(1)[:, :length]


NEGLIGIBLE_EXPONENT = -30.0  # exp(-30) ≈ 1e-13: below float32's resolution of any kernel value


def decayed_powers(exponent: torch.Tensor) -> torch.Tensor:
    """exp(exponent), exactly 0 where its real part is below ``NEGLIGIBLE_EXPONENT``: the long lags'
    terms would otherwise be subnormal floats, which the CPU multiplies and transforms many times
    slower, for a contribution below float32's resolution."""
    gone = exponent.real < NEGLIGIBLE_EXPONENT
    return torch.exp(exponent.masked_fill(gone, 0)).masked_fill(gone, 0)


class TiedDropout(nn.Module):
    """Dropout of whole channels, the same mask at every position (s4d.py's DropoutNd): (B, H, L)."""

    def __init__(self, p: float) -> None:
        super().__init__()
        self.p = p

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0:
            return x
        keep = torch.rand(x.shape[:-1], device=x.device)[..., None] >= self.p  # (B, H, 1)
        return x * keep / (1 - self.p)


@register_mixer("s4d", budget_option="d_state")
class S4D(nn.Module):
    """S4D as a mixer (module docstring): x (B, L, dim), mask (B, L) bool or None -> (B, L, dim)."""

    def __init__(
        self,
        *,
        dim: int,
        seq_len: int,
        d_state: EvenPositiveInt = 64,
        init: Literal["lin", "inv"] = "lin",
        dt_min: PositiveFloat = 0.001,
        dt_max: PositiveFloat = 0.1,
        lr: PositiveFloat | None = 0.001,
        bidirectional: bool = True,
        dropout: Probability = 0.0,
    ) -> None:
        super().__init__()
        if dt_min > dt_max:
            raise ValueError(f"attention 's4d': dt_min ({dt_min}) must be at most dt_max ({dt_max})")
        self.dim = dim
        self.bidirectional = bidirectional
        self.D = nn.Parameter(torch.randn(dim))
        self.kernel = S4DKernel((2 if bidirectional else 1) * dim, d_state, init, dt_min, dt_max, lr)
        self.dropout = TiedDropout(dropout)
        self.output_linear = nn.Conv1d(dim, 2 * dim, kernel_size=1)

    def convolution_kernel(self, length: int) -> torch.Tensor:
        """The kernel over lags 0..L-1, then (bidirectional) lags -L..-1: (dim, L) or (dim, 2L)."""
        k = self.kernel(length)  # (S·dim, L)
        if not self.bidirectional:
            return k
        forward, backward = k[: self.dim], k[self.dim :]  # (dim, L) each
        return F.pad(forward, (0, length)) + F.pad(backward.flip(-1), (length, 0))  # (dim, 2L)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        length = x.shape[1]
        u = x.transpose(1, 2).float()  # (B, dim, L)
        if mask is not None:
            u = u * mask[:, None, :]  # padded positions add nothing to any output
        k = self.convolution_kernel(length)  # (dim, L) or (dim, 2L)
        k_f = torch.fft.rfft(k, n=2 * length)  # (dim, L + 1)
        u_f = torch.fft.rfft(u, n=2 * length)  # (B, dim, L + 1)
        y = torch.fft.irfft(u_f * k_f, n=2 * length)[..., :length]  # (B, dim, L)
        y = y + u * self.D[:, None]  # the D skip
        y = self.dropout(F.gelu(y))  # (B, dim, L)
        y = F.glu(self.output_linear(y), dim=-2)  # (B, dim, L)
        return y.transpose(1, 2)  # (B, L, dim)
