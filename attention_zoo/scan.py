"""The selective scan of Mamba without a Python loop over the positions: chunks of the sequence, each
scanned by odd-even halving, with a short loop over the chunks that carries the state.

``linear_scan`` solves ``h_t = a_t * h_{t-1} + b_t`` (``h_{-1} = 0``) in log2(T) halving steps: pairs
of neighbouring steps compose into one step of a sequence half as long, which is solved the same way,
and the even positions are filled in from the odd ones. Each level holds half the previous one, so
the work and memory are linear in T, and every value is a product or sum of the recurrence's own
terms (no exponent of a cumulative sum that could overflow). ``selective_scan`` runs it over chunks
of ``chunk`` positions, carrying the state from one chunk to the next. Each chunk is a
``ScanChunk``, whose backward recomputes the chunk's states and runs the recurrence backwards by the
same halving, so what backward keeps is the chunk inputs and the carried states: linear in the
length, without the (batch, seq, channels, state) terms.
"""

from __future__ import annotations

import torch

DEFAULT_CHUNK = 256


def linear_scan(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """h_t = a_t * h_{t-1} + b_t along dim 1, h_{-1} = 0: a, b (B, T, ...) -> h (B, T, ...)."""
    length = a.shape[1]
    if length == 1:
        return b
    if length % 2:  # one identity step (a = 1, b = 0) at the end makes the length even
        a = torch.cat([a, torch.ones_like(a[:, :1])], dim=1)
        b = torch.cat([b, torch.zeros_like(b[:, :1])], dim=1)
        return linear_scan(a, b)[:, :length]
    a_even, a_odd = a.unflatten(1, (-1, 2)).unbind(2)  # (B, T/2, ...) each; backward stacks, no fill
    b_even, b_odd = b.unflatten(1, (-1, 2)).unbind(2)
    h_odd = linear_scan(a_odd * a_even, torch.addcmul(b_odd, a_odd, b_even))  # h at 1, 3, ...: (B, T/2, ...)
    h_even = torch.cat([b_even[:, :1], torch.addcmul(b_even[:, 1:], a_even[:, 1:], h_odd[:, :-1])], dim=1)
    return torch.stack([h_even, h_odd], dim=2).flatten(1, 2)  # (B, T, ...)


def chunk_states(
    u: torch.Tensor, delta: torch.Tensor, A: torch.Tensor, B: torch.Tensor, state: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """The decays exp(Δ A) and the states h of one chunk from ``state``: u, delta (B, T, E), A (E, N),
    B (B, T, N), state (B, E, N) -> decay, h (B, T, E, N)."""
    decay = torch.exp(delta[..., None] * A)  # exp(Δ A): (B, T, E, N)
    inflow = (delta * u)[..., None] * B[:, :, None, :]  # Δ B u: (B, T, E, N)
    inflow[:, 0] += decay[:, 0] * state  # the carried state enters at the first step
    return decay, linear_scan(decay, inflow)


class ScanChunk(torch.autograd.Function):
    """One chunk of the selective scan: (u, delta, A, B, C, state) -> (y (B, T, E), last state (B, E, N)).

    Backward keeps only the inputs and recomputes the states; the gradient of the states is the
    same recurrence run backwards, G_t = C_t gy_t + exp(Δ_{t+1} A) G_{t+1}, solved by ``linear_scan``
    over the reversed chunk, and every other gradient is a product or a sum over G.
    """

    @staticmethod
    def forward(ctx, u, delta, A, B, C, state):
        ctx.save_for_backward(u, delta, A, B, C, state)
        _, h = chunk_states(u, delta, A, B, state)  # (B, T, E, N)
        return torch.einsum("bten,btn->bte", h, C), h[:, -1]

    @staticmethod
    def backward(ctx, grad_y, grad_last):
        u, delta, A, B, C, state = ctx.saved_tensors
        decay, h = chunk_states(u, delta, A, B, state)  # (B, T, E, N)
        grad_h = grad_y[..., None] * C[:, :, None, :]  # (B, T, E, N)
        grad_h[:, -1] += grad_last
        ahead = torch.cat([decay[:, 1:], torch.ones_like(decay[:, :1])], dim=1)  # exp(Δ_{t+1} A)
        G = linear_scan(ahead.flip(1), grad_h.flip(1)).flip(1)  # dL/d inflow_t: (B, T, E, N)
        previous = torch.cat([state[:, None], h[:, :-1]], dim=1)  # h_{t-1}: (B, T, E, N)
        grad_exponent = G * previous * decay  # dL/d(Δ_t A): (B, T, E, N)
        grad_flow = torch.einsum("bten,btn->bte", G, B)  # dL/d(Δ_t u_t): (B, T, E)
        grad_delta = torch.einsum("bten,en->bte", grad_exponent, A) + grad_flow * u
        return (
            grad_flow * delta,
            grad_delta,
            torch.einsum("bten,bte->en", grad_exponent, delta),
            torch.einsum("bten,bte->btn", G, delta * u),
            torch.einsum("bte,bten->btn", grad_y, h),
            G[:, 0] * decay[:, 0],
        )


def selective_scan(
    u: torch.Tensor,
    delta: torch.Tensor,
    A: torch.Tensor,
    B: torch.Tensor,
    C: torch.Tensor,
    chunk: int = DEFAULT_CHUNK,
) -> torch.Tensor:
    """y_t = C_t · h_t with h_t = exp(Δ_t A) h_{t-1} + Δ_t B_t u_t, h_{-1} = 0, in float32.

    u, delta: (B, L, E); A: (E, N), real and negative; B, C: (B, L, N) -> y (B, L, E). A step with
    Δ = 0 leaves the state as it is (the mixers give padded positions Δ = 0).
    """
    with torch.autocast(u.device.type, enabled=False):
        return chunked_scan(*(t.float() for t in (u, delta, A, B, C)), chunk)


def chunked_scan(
    u: torch.Tensor, delta: torch.Tensor, A: torch.Tensor, B: torch.Tensor, C: torch.Tensor, chunk: int
) -> torch.Tensor:
    """``selective_scan``'s loop over chunks (``ScanChunk``), the state carried from one to the next."""
    batch, length, channels = u.shape
    state = u.new_zeros(batch, channels, A.shape[-1])  # (B, E, N)
    outputs = []
    for start in range(0, length, chunk):
        part = slice(start, start + chunk)
        arguments = (u[:, part], delta[:, part], A, B[:, part], C[:, part], state)
        y, state = ScanChunk.apply(*arguments)
        outputs.append(y)
    return torch.cat(outputs, dim=1)  # (B, L, E)
