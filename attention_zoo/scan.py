"""The selective scan of Mamba without a Python loop over the positions: chunks of the sequence, each
scanned by odd-even halving, with a short loop over the chunks that carries the state.

``linear_scan`` solves ``h_t = a_t * h_{t-1} + b_t`` (``h_{-1} = 0``) in log2(T) halving steps: pairs
of neighbouring steps compose into one step of a sequence half as long, which is solved the same way,
and the even positions are filled in from the odd ones. Each level holds half the previous one, so
the work and memory are linear in T, and every value is a product or sum of the recurrence's own
terms (no exponent of a cumulative sum that could overflow). ``selective_scan`` runs it over chunks
of ``chunk`` positions, carrying the state from one chunk to the next; with gradients on, each chunk
is recomputed in backward (``torch.utils.checkpoint``), so what backward keeps is the chunk inputs
and the carried states, linear in the length and free of the (batch, seq, channels, state) terms.
"""

from __future__ import annotations

import torch
from torch.utils.checkpoint import checkpoint

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


def scan_chunk(
    u: torch.Tensor,
    delta: torch.Tensor,
    A: torch.Tensor,
    B: torch.Tensor,
    C: torch.Tensor,
    state: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One chunk from ``state``: u, delta (B, T, E), A (E, N), B, C (B, T, N), state (B, E, N) ->
    y (B, T, E) and the state after the chunk (B, E, N)."""
    decay = torch.exp(delta[..., None] * A)  # exp(Δ A): (B, T, E, N)
    inflow = (delta * u)[..., None] * B[:, :, None, :]  # Δ B u: (B, T, E, N)
    inflow[:, 0] += decay[:, 0] * state  # the carried state enters at the first step
    h = linear_scan(decay, inflow)  # (B, T, E, N)
    y = torch.einsum("bten,btn->bte", h, C)  # C_t · h_t: (B, T, E)
    return y, h[:, -1]


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
    """``selective_scan``'s loop over chunks, each recomputed in backward when gradients are on."""
    batch, length, channels = u.shape
    state = u.new_zeros(batch, channels, A.shape[-1])  # (B, E, N)
    recompute = torch.is_grad_enabled() and any(t.requires_grad for t in (u, delta, A, B, C))
    outputs = []
    for start in range(0, length, chunk):
        part = slice(start, start + chunk)
        arguments = (u[:, part], delta[:, part], A, B[:, part], C[:, part], state)
        if recompute:
            y, state = checkpoint(scan_chunk, *arguments, use_reentrant=False)
        else:
            y, state = scan_chunk(*arguments)
        outputs.append(y)
    return torch.cat(outputs, dim=1)  # (B, L, E)
