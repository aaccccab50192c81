"""The selective scan of Mamba without a Python loop over the sequence: chunks of the sequence, each
scanned by blocks, with a short loop over the chunks that carries the state, and a backward written
out by hand.

``linear_scan`` solves ``h_t = a_t * h_{t-1} + b_t`` (``h_{-1} = 0``) by blocks of ``BLOCK``
positions: every block runs from a zero state, all blocks side by side (a loop over the ``BLOCK``
positions within a block, never over the sequence), keeping the product of its a's; the states at
the blocks' ends are the same recurrence over a sequence ``BLOCK`` times shorter, solved the same
way; each block then adds its entering state times that product. Work and memory are linear in T,
and every value is a product or sum of the recurrence's own terms (no exponent of a cumulative sum
that could overflow).

``selective_scan`` runs it over chunks of ``chunk`` positions, carrying the state from one chunk to
the next (``SelectiveScan``). Its backward is the recurrence's own: the gradient g_t reaching h_t
obeys ``g_t = ∂y_t/∂h_t + a_{t+1} g_{t+1}``, one scan over the reversed chunk, from which every
input's gradient is a product and a sum. Backward recomputes each chunk from its entering state, so
what it keeps is the inputs and one state per chunk, linear in the length and free of the (batch,
seq, channels, state) terms, and autograd records one node instead of the scan's many.
"""

from __future__ import annotations

import torch
from torch.autograd.function import FunctionCtx, once_differentiable

DEFAULT_CHUNK = 128
BLOCK = 8  # positions per block of ``linear_scan``


def linear_scan(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """h_t = a_t * h_{t-1} + b_t along dim 1, h_{-1} = 0, by blocks (module docstring):
    a, b (B, T, ...) -> h (B, T, ...)."""
    length = a.shape[1]
    if length <= BLOCK:
        return block_steps(a[:, None], b[:, None])[0][:, 0]
    pad = -length % BLOCK  # identity steps (a = 1, b = 0) at the end fill the last block
    if pad:
        a = torch.cat([a, a.new_ones(a.shape[0], pad, *a.shape[2:])], dim=1)
        b = torch.cat([b, b.new_zeros(b.shape[0], pad, *b.shape[2:])], dim=1)
    h, decay = block_steps(a.unflatten(1, (-1, BLOCK)), b.unflatten(1, (-1, BLOCK)))  # (B, M, k, ...)
    ends = linear_scan(decay[:, :, -1], h[:, :, -1])  # the state at each block's end: (B, M, ...)
    h[:, 1:].addcmul_(decay[:, 1:], ends[:, :-1, None])  # each block's entering state, decayed
    return h.flatten(1, 2)[:, :length]


def block_steps(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Every block from a zero state, all blocks at once, one step per position within a block:
    a, b (B, M, k, ...) -> h and the products a_1 ⋯ a_t within each block (B, M, k, ...)."""
    h = torch.empty_like(b)
    h[:, :, 0] = b[:, :, 0]
    for t in range(1, a.shape[2]):
        torch.addcmul(b[:, :, t], a[:, :, t], h[:, :, t - 1], out=h[:, :, t])
    return h, torch.cumprod(a, dim=2)


def chunk_states(
    u: torch.Tensor, delta: torch.Tensor, A: torch.Tensor, B: torch.Tensor, state: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """One chunk's states from ``state``: u, delta (B, T, E), A (E, N), B (B, T, N), state (B, E, N) ->
    h_t and the step factors exp(Δ_t A), both (B, T, E, N)."""
    decay = torch.exp(delta[..., None] * A)  # exp(Δ A)
    inflow = (delta * u)[..., None] * B[:, :, None, :]  # Δ B u
    inflow[:, 0].addcmul_(decay[:, 0], state)  # the carried state enters at the first step
    return linear_scan(decay, inflow), decay


class SelectiveScan(torch.autograd.Function):
    """``selective_scan`` over chunks, with the recurrence's own backward (module docstring)."""

    @staticmethod
    def forward(
        ctx: FunctionCtx,
        u: torch.Tensor,
        delta: torch.Tensor,
        A: torch.Tensor,
        B: torch.Tensor,
        C: torch.Tensor,
        chunk: int,
    ) -> torch.Tensor:
        batch, length, channels = u.shape
        states = [u.new_zeros(batch, channels, A.shape[-1])]  # entering each chunk: (B, E, N)
        outputs = []
        for start in range(0, length, chunk):
            part = slice(start, start + chunk)
            h, _ = chunk_states(u[:, part], delta[:, part], A, B[:, part], states[-1])
            outputs.append((h * C[:, part, None, :]).sum(-1))  # C_t · h_t: (B, T, E)
            states.append(h[:, -1].clone())  # a view would keep the whole chunk's states
        ctx.save_for_backward(u, delta, A, B, C, *states[:-1])
        ctx.chunk = chunk
        return torch.cat(outputs, dim=1)  # (B, L, E)

    @staticmethod
    @once_differentiable
    def backward(ctx: FunctionCtx, grad_y: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        u, delta, A, B, C, *states = ctx.saved_tensors
        grads = [torch.empty_like(t) for t in (u, delta, B, C)]  # each chunk fills its part
        grad_A = torch.zeros_like(A)
        carried = torch.zeros_like(states[0])  # the gradient reaching the state leaving the chunk
        for index in reversed(range(len(states))):
            part = slice(index * ctx.chunk, (index + 1) * ctx.chunk)
            u_c, delta_c, B_c, C_c, dy = u[:, part], delta[:, part], B[:, part], C[:, part], grad_y[:, part]
            h, decay = chunk_states(u_c, delta_c, A, B_c, states[index])
            grad_h = dy[..., None] * C_c[:, :, None, :]  # ∂y_t/∂h_t: (B, T, E, N)
            grad_h[:, -1] += carried
            after = torch.cat([decay[:, 1:], torch.zeros_like(decay[:, :1])], dim=1)  # a_{t+1}, 0 at the end
            g = linear_scan(after.flip(1), grad_h.flip(1)).flip(1)  # gradient of each step's output
            before = torch.cat([states[index][:, None], h[:, :-1]], dim=1)  # h_{t-1}
            grad_log_decay = g * before * decay  # ∂/∂(Δ_t A)
            grad_x = (g * B_c[:, :, None, :]).sum(-1)  # ∂/∂(Δ_t u_t): (B, T, E)
            grads[0][:, part] = grad_x * delta_c
            grads[1][:, part] = grad_x * u_c + (grad_log_decay * A).sum(-1)
            grads[2][:, part] = (g * (delta_c * u_c)[..., None]).sum(2)  # (B, T, N)
            grads[3][:, part] = (h * dy[..., None]).sum(2)
            grad_A += (grad_log_decay * delta_c[..., None]).sum((0, 1))
            carried = g[:, 0] * decay[:, 0]
        grad_u, grad_delta, grad_B, grad_C = grads
        return grad_u, grad_delta, grad_A, grad_B, grad_C, None


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
    """``selective_scan`` in the inputs' own dtype (``SelectiveScan``): shapes as there."""
    return SelectiveScan.apply(u, delta, A, B, C, chunk)
