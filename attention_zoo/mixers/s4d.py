"""S4D (Gu, Gupta, Goel and Ré, NeurIPS 2022): the diagonal state-space layer of state-spaces/s4's
``models/s4/s4d.py``, as a mixer in place of multi-head attention.

Each of the ``dim`` channels is a diagonal SSM with ``d_state / 2`` complex modes (conjugate pairs, so
a state of ``d_state`` real numbers): ``A = -exp(log_A_real) + i·A_imag``, S4D-Lin (``A_imag = π n``)
or S4D-Inv (``A_imag = (N/π)(N/(2n+1) - 1)``), real part -1/2; a learned step ``dt = exp(log_dt)``
drawn log-uniformly in [dt_min, dt_max]; B = 1 and C complex. ZOH discretisation gives the kernel
``K_l = 2 Re(Σ_n C_n (exp(dt A_n) - 1) / A_n · exp(dt A_n l))`` (a Vandermonde product), applied as
an FFT convolution padded to 2L so that nothing wraps around (``attention_zoo.parts.long_conv``);
then the D skip, GELU, dropout and a position-wise ``Conv1d(dim, 2·dim, 1)`` with GLU.

``bidirectional`` (the S4 repository's LRA configs): a second SSM per channel whose kernel runs over
the reversed sequence, and the two are summed into one two-sided kernel per channel, as the S4
repository's ``fftconv.py`` does (channels are summed, not split): ``y_t = Σ_{s<=t} K_{t-s} u_s +
Σ_{s>t} K'_{s-t-1} u_s`` (the reverse kernel starts one step ahead, as theirs does, so the D skip
alone carries ``u_t``). Padded positions are zeroed before the convolution, so they reach no real
position from either side; the reverse direction then equals the SSM run over each sequence reversed
within its own length. Causal: the one-directional SSM, y_t from u_s, s <= t only; ``causal=True``
needs ``bidirectional=false`` (a line naming the option, not a silent override of the config).

``shared_directions`` (with ``bidirectional``): the two directions share dt and A and differ in C
only, as in the S4 repository's ``FFTConv(bidirectional=True)``, whose kernel has two output channels
(``kernels/fftconv.py``, ``kernels/ssm.py``); by default each direction is an SSM of its own.

``A`` and ``dt`` are trained at their own learning rate ``lr`` (``dt`` at ``dt_lr`` when it is set:
the S4 repository's ``lr: {dt: ..., A: ...}``) without weight decay, declared on the parameters as
``_optim`` (the S4 repository's convention, read by ``lra.model.module``). C is an ordinary parameter, as in
s4d.py, unless ``c_lr`` is set: then it trains at that rate with the run's weight decay, as the S4
repository's diagonal kernel registers it (``kernels/ssm.py`` ``SSMKernelDiag``: ``lr_dict['C']``, no
``wd``). D is an ordinary parameter.

``conv_dropout``: elementwise dropout on the convolution plus the D skip, before the GELU (the
``nn.Dropout`` of the S4 repository's ``FFTConv``); ``dropout``: whole channels after the GELU.
"""

from __future__ import annotations

import math
from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

from attention_zoo.parts.causality import require_for_causal
from attention_zoo.parts.long_conv import fft_convolution
from attention_zoo.registry import EvenPositiveInt, PositiveFloat, Probability, register_mixer


def powers(dtA: torch.Tensor, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """exp(dtA l) in real and imaginary parts: dtA (H, N/2) complex, positions (P,) -> 2 × (H, N/2, P)."""
    magnitude = torch.exp(dtA.real[..., None] * positions)  # (H, N/2, P)
    angle = dtA.imag[..., None] * positions  # (H, N/2, P)
    return magnitude * torch.cos(angle), magnitude * torch.sin(angle)


def vandermonde(C: torch.Tensor, dtA: torch.Tensor, length: int) -> torch.Tensor:
    """K_l = 2 Re(Σ_n C_n exp(dtA_n l)) for l < length: C, dtA (H, N/2) complex -> (H, length).

    Positions are split as l = b·m + j with b ≈ √L, and exp(dtA l) = exp(dtA b m)·exp(dtA j), so the
    sum over n is a real matrix product of (H, N/2, L/b) by (H, N/2, b) terms: no (H, N/2, L) tensor
    is formed, and no complex exp (many times slower than real ones on a CPU) is taken.
    """
    C, dtA = C.to(torch.complex128), dtA.to(torch.complex128)  # large phases l·Im(dtA) in float64
    block = 1 << math.ceil(math.log2(length) / 2)  # b: a power of two near √L
    starts = torch.arange(0, length, block, device=dtA.device)  # b·m: (M,)
    inner_real, inner_imag = powers(dtA, torch.arange(block, device=dtA.device))  # exp(dtA j): (H, N/2, b)
    outer_real, outer_imag = powers(dtA, starts)  # exp(dtA b m): (H, N/2, M)
    real = C.real[..., None] * outer_real - C.imag[..., None] * outer_imag  # Re(C exp(dtA b m))
    imag = C.real[..., None] * outer_imag + C.imag[..., None] * outer_real  # Im(C exp(dtA b m))
    K = torch.einsum("hnm,hnj->hmj", real, inner_real) - torch.einsum("hnm,hnj->hmj", imag, inner_imag)
    return 2 * K.flatten(1)[:, :length].float()  # (H, L)


def declare_optim(parameter: nn.Parameter, lr: float | None) -> None:
    """Train ``parameter`` without weight decay, at learning rate ``lr`` (None: the run's)."""
    parameter._optim = {"weight_decay": 0.0} | ({} if lr is None else {"lr": lr})


class S4DKernel(nn.Module):
    """The convolution kernels of ``channels`` diagonal SSMs, ``outputs`` C (read-outs) each:
    forward(L) -> (outputs · channels, L), the first ``channels`` rows from the first C."""

    def __init__(
        self,
        channels: int,
        d_state: int,
        init: str,
        dt_min: float,
        dt_max: float,
        lr: float | None,
        dt_lr: float | None = None,
        c_lr: float | None = None,
        outputs: int = 1,
    ) -> None:
        super().__init__()
        self.outputs = outputs
        modes = d_state // 2
        log_dt = torch.rand(channels) * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min)  # (H,)
        n = torch.arange(modes, dtype=torch.float32).expand(channels, modes)  # (H, N/2)
        A_imag = math.pi * n if init == "lin" else d_state / math.pi * (d_state / (2 * n + 1) - 1)
        self.C = nn.Parameter(
            torch.view_as_real(torch.randn(outputs * channels, modes, dtype=torch.cfloat))
        )  # (S·H, N/2, 2)
        self.log_dt = nn.Parameter(log_dt)
        self.log_A_real = nn.Parameter(torch.full((channels, modes), math.log(0.5)))  # (H, N/2)
        self.A_imag = nn.Parameter(A_imag.clone())  # (H, N/2)
        declare_optim(self.log_dt, lr if dt_lr is None else dt_lr)
        for parameter in (self.log_A_real, self.A_imag):
            declare_optim(parameter, lr)
        if c_lr is not None:
            self.C._optim = {"lr": c_lr}  # the run's weight decay

    def forward(self, length: int) -> torch.Tensor:
        dt = torch.exp(self.log_dt)  # (H,)
        C = torch.view_as_complex(self.C)  # (S·H, N/2)
        A = -torch.exp(self.log_A_real) + 1j * self.A_imag  # (H, N/2)
        dtA = A * dt[:, None]  # (H, N/2)
        A, dtA = A.repeat(self.outputs, 1), dtA.repeat(self.outputs, 1)  # (S·H, N/2): each C's SSM
        C = C * (torch.exp(dtA) - 1.0) / A  # ZOH: C·B̄ with B = 1, (S·H, N/2)
        return vandermonde(C, dtA, length)  # (S·H, L)


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


@register_mixer("s4d", budget_option="d_state", causal=True)
class S4D(nn.Module):
    """S4D as a mixer (module docstring): x (B, L, dim), mask (B, L) bool or None -> (B, L, dim).

    State size: d_state real numbers (d_state / 2 complex modes) per channel and direction,
    d_state · dim · (2 if bidirectional else 1), whatever the length (Zoology's H3 counts its SSM's
    the same way, ``zoology/mixers/h3/h3.py``).
    """

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
        dt_lr: PositiveFloat | None = None,
        bidirectional: bool = True,
        dropout: Probability = 0.0,
        c_lr: PositiveFloat | None = None,
        shared_directions: bool = False,
        conv_dropout: Probability = 0.0,
        causal: bool = False,
    ) -> None:
        super().__init__()
        if dt_min > dt_max:
            raise ValueError(f"attention 's4d': dt_min ({dt_min}) must be at most dt_max ({dt_max})")
        require_for_causal("s4d", causal, "bidirectional", bidirectional, False)
        self.dim = dim
        self.bidirectional = bidirectional
        self.D = nn.Parameter(torch.randn(dim))
        directions = 2 if bidirectional else 1
        ssms, outputs = (1, directions) if shared_directions else (directions, 1)  # per channel
        self.kernel = S4DKernel(ssms * dim, d_state, init, dt_min, dt_max, lr, dt_lr, c_lr, outputs)
        self.conv_dropout = nn.Dropout(conv_dropout) if conv_dropout > 0 else nn.Identity()
        self.dropout = TiedDropout(dropout)
        self.output_linear = nn.Conv1d(dim, 2 * dim, kernel_size=1)

    @staticmethod
    def state_size(*, dim: int, d_state: int, bidirectional: bool, causal: bool, **_: object) -> int:
        require_for_causal("s4d", causal, "bidirectional", bidirectional, False)
        return d_state * dim * (2 if bidirectional else 1)

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
        y = fft_convolution(u, self.convolution_kernel(length))  # (B, dim, L)
        y = y + u * self.D[:, None]  # the D skip
        y = self.dropout(F.gelu(self.conv_dropout(y)))  # (B, dim, L)
        y = F.glu(self.output_linear(y), dim=-2)  # (B, dim, L)
        return y.transpose(1, 2)  # (B, L, dim)
