"""Each mixer equals its layer re-stated in the smallest plain form: one sequence at a time, its real
tokens only, the state-space recurrence run step by step (the reverse direction over the sequence
reversed within its own length), to 1e-5."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import attention_zoo
from attention_zoo.mixers import s4d
from attention_zoo.parts.scan import BLOCK, CPU_CHUNK_BYTES, BlockScan, chunked_scan, default_chunk

DIM = 8
LENGTHS = [53, 31, 1]  # a padded batch: full, padded, a single real token


def padded_inputs(seq: int = 53) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.randn(len(LENGTHS), seq, DIM, generator=torch.Generator().manual_seed(0))  # (B, N, dim)
    return x, torch.arange(seq)[None, :] < torch.tensor(LENGTHS)[:, None]


def s4d_recurrence(kernel, channels: slice, u: torch.Tensor) -> torch.Tensor:
    """The discretised SSMs of ``channels`` step by step: u (H, n) -> y (H, n), y_t = 2 Re(C h_t),
    h_t = exp(dt A) h_{t-1} + (exp(dt A) - 1) / A · u_t."""
    dt = torch.exp(kernel.log_dt[channels])[:, None]  # (H, 1)
    A = -torch.exp(kernel.log_A_real[channels]) + 1j * kernel.A_imag[channels]  # (H, N/2)
    C = torch.view_as_complex(kernel.C[channels].contiguous())  # (H, N/2)
    A_bar, B_bar = torch.exp(dt * A), (torch.exp(dt * A) - 1) / A
    h = torch.zeros_like(A)
    outputs = []
    for t in range(u.shape[1]):
        h = A_bar * h + B_bar * u[:, t : t + 1]
        outputs.append(2 * (C * h).sum(-1).real)
    return torch.stack(outputs, dim=1)


def s4d_plain(mixer, x: torch.Tensor) -> torch.Tensor:
    """One sequence's real tokens x (n, dim) -> (n, dim)."""
    u = x.T  # (dim, n)
    y = s4d_recurrence(mixer.kernel, slice(0, DIM), u)
    if mixer.bidirectional:  # the reversed sequence's SSM, read one step ahead (nothing after the last)
        backward = s4d_recurrence(mixer.kernel, slice(DIM, 2 * DIM), u.flip(1)).flip(1)  # (dim, n)
        y = y + F.pad(backward[:, 1:], (0, 1))
    y = F.gelu(y + mixer.D[:, None] * u)
    return F.glu(mixer.output_linear(y[None]), dim=-2)[0].T


def selective_scan_loop(u, delta, A, B, C):
    """The recurrence one position after another: u, delta (B, L, E), A (E, N), B, C (B, L, N)."""
    state, outputs = torch.zeros(u.shape[0], *A.shape, dtype=u.dtype), []
    for t in range(u.shape[1]):
        x = (delta[:, t] * u[:, t])[..., None] * B[:, t, None]  # (B, E, N)
        state = torch.exp(delta[:, t, :, None] * A) * state + x
        outputs.append(state @ C[:, t, :, None])
    return torch.cat(outputs, dim=-1).transpose(1, 2)


def mamba_direction_plain(ssm, u: torch.Tensor) -> torch.Tensor:
    """One direction over real tokens u (n, E) -> (n, E): the conv tap by tap, the scan step by step."""
    taps = ssm.conv1d.weight[:, 0]  # (E, K)
    width = taps.shape[1]
    padded = F.pad(u, (0, 0, width - 1, 0))  # (n + K - 1, E)
    h = F.silu(ssm.conv1d.bias + sum(taps[:, k] * padded[k : k + len(u)] for k in range(width)))
    dt, B, C = ssm.x_proj(h).split([ssm.dt_rank, ssm.d_state, ssm.d_state], dim=-1)
    delta = F.softplus(ssm.dt_proj(dt))  # (n, E)
    A = -torch.exp(ssm.A_log)  # (E, N)
    return selective_scan_loop(h[None], delta[None], A, B[None], C[None])[0] + ssm.D * h


def mamba_plain(mixer, x: torch.Tensor) -> torch.Tensor:
    """One sequence's real tokens x (n, dim) -> (n, dim)."""
    u, z = mixer.in_proj(x).chunk(2, dim=-1)
    y = mamba_direction_plain(mixer.directions[0], u)
    if len(mixer.directions) == 2:
        y = (y + mamba_direction_plain(mixer.directions[1], u.flip(0)).flip(0)) / 2
    return mixer.out_proj(y * F.silu(z))


PLAIN = {"s4d": s4d_plain, "mamba": mamba_plain}
CASES = [
    ("s4d", {}),
    ("s4d", {"bidirectional": False, "init": "inv", "d_state": 16}),
    ("mamba", {"scan_chunk": 16}),
    ("mamba", {"bidirectional": False, "scan_chunk": 5}),
]


@pytest.mark.parametrize(("name", "options"), CASES, ids=[f"{n}-{o}" for n, o in CASES])
def test_mixer_equals_its_recurrence_step_by_step_with_padding(name, options):
    torch.manual_seed(0)
    mixer = attention_zoo.build_attention(name, dim=DIM, seq_len=64, **options).eval()
    x, mask = padded_inputs()
    with torch.no_grad():
        out = mixer(x, mask)
        for i, length in enumerate(LENGTHS):
            expected = PLAIN[name](mixer, x[i, :length])
            torch.testing.assert_close(out[i, :length], expected, atol=1e-5, rtol=1e-5)


def linear_scan(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``BlockScan`` of h_t = a_t * h_{t-1} + b_t along dim 1, h_{-1} = 0: a, b (B, T, ...) -> (B, T, ...)."""
    length, rest = a.shape[1], (a.shape[0], *a.shape[2:])
    pad = -length % BLOCK  # identity steps (a = 1, b = 0) fill the last block
    a = torch.cat([a.movedim(1, 0), a.new_ones(pad, *rest)])  # (T, B, ...)
    h = torch.cat([b.movedim(1, 0), b.new_zeros(pad, *rest)])
    BlockScan(a, h, torch.empty_like(a))(None)
    return h[:length].movedim(0, 1)


@pytest.mark.parametrize("length", [1, 2, 5, 16, 37, 1000, 1024])
def test_linear_scan_equals_the_loop(length):
    """Lengths 1000 and 1024 have many blocks: their ends are scanned one by one, or (1024) by
    blocks of blocks; a near 1 carries every state far."""
    gen = torch.Generator().manual_seed(length)
    a = 0.9 + 0.1 * torch.rand(2, length, 3, generator=gen, dtype=torch.float64)
    b = torch.randn(2, length, 3, generator=gen, dtype=torch.float64)
    h, expected = torch.zeros(2, 3, dtype=torch.float64), []
    for t in range(length):
        h = a[:, t] * h + b[:, t]
        expected.append(h)
    torch.testing.assert_close(linear_scan(a, b), torch.stack(expected, dim=1), atol=1e-12, rtol=1e-12)


def test_the_scan_backward_is_the_gradient():
    gen = torch.Generator().manual_seed(2)
    u, delta = torch.randn(2, 11, 3, generator=gen), torch.rand(2, 11, 3, generator=gen)
    A, B, C = (
        -torch.rand(3, 2, generator=gen),
        torch.randn(2, 11, 2, generator=gen),
        torch.randn(2, 11, 2, generator=gen),
    )
    inputs = [t.double().requires_grad_(True) for t in (u, delta, A, B, C)]
    assert torch.autograd.gradcheck(lambda *tensors: chunked_scan(*tensors, 4), inputs)


@pytest.mark.parametrize("chunk", [8, 64, 128, 512])
def test_the_scan_in_any_chunk_has_the_loops_outputs_and_gradients(chunk):
    """Chunks of 128 and 512 scan their block ends by blocks of blocks; 300 positions leave a
    partial last chunk."""
    gen = torch.Generator().manual_seed(chunk)
    u, B, C = (torch.randn(2, 300, n, generator=gen) for n in (4, 3, 3))
    delta, A = 0.05 * torch.rand(2, 300, 4, generator=gen), -torch.rand(4, 3, generator=gen)
    weights = torch.randn(2, 300, 4, generator=gen)
    grads = []
    for scan in (selective_scan_loop, lambda *t: chunked_scan(*t, chunk)):
        inputs = [t.double().requires_grad_(True) for t in (u, delta, A, B, C)]
        y = scan(*inputs)
        grads.append((y, *torch.autograd.grad((y * weights).sum(), inputs)))
    for got, expected in zip(grads[1], grads[0], strict=True):
        torch.testing.assert_close(got, expected, atol=1e-9, rtol=1e-9)


@pytest.mark.parametrize(("threads", "budget"), [(1, "one thread"), (2, "several")])
def test_a_cpu_chunk_is_the_most_positions_whose_buffer_fits_its_budget(threads, budget):
    position_bytes = 16 * 128 * 4  # one sequence's (state, channels) float32 values at one position
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        chunk = default_chunk(torch.empty(1, 4096, 128), d_state=16)
        assert chunk * position_bytes <= CPU_CHUNK_BYTES[budget] < (chunk + 1) * position_bytes
        assert default_chunk(torch.empty(4, 4096, 128), d_state=16) == chunk // 4
        assert default_chunk(torch.empty(1024, 1024, 128), d_state=16) == BLOCK  # never less than a block
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("length", [1, 2, 5, 64, 1000, 4099])
def test_s4d_kernel_in_blocks_equals_the_vandermonde_product(length):
    gen = torch.Generator().manual_seed(length)
    C = torch.randn(3, 4, dtype=torch.cfloat, generator=gen)  # (H, N/2)
    dtA = torch.complex(-0.01 * torch.rand(3, 4, generator=gen), 0.05 * torch.rand(3, 4, generator=gen))
    direct = 2 * torch.einsum("hn,hnl->hl", C, torch.exp(dtA[..., None] * torch.arange(length))).real
    torch.testing.assert_close(s4d.vandermonde(C, dtA, length), direct, atol=1e-5, rtol=1e-5)
