"""The selective scan of Mamba without a Python loop over the sequence: chunks of the sequence, each
scanned by blocks into buffers the chunks share, with a short loop over the chunks that carries the
state, and a backward written out by hand.

``BlockScan`` solves ``h_t = a_t * h_{t-1} + b_t`` in place along the first dim by blocks of ``BLOCK``
positions: all blocks step side by side from a zero state (a loop over the ``BLOCK`` positions
within a block, never over the sequence), keeping the products of their a's. The block ends then
obey the same recurrence, with a block's product as its a: ``SequentialScan`` solves it end after
end, or for many blocks a ``BlockScan`` of the ends does (blocks of blocks, so that a long chunk
costs a few dozen operations, not one per block). Last, every position adds its block's entering
state (the end before it) times its product, in one operation. Every value is a product or sum of
the recurrence's own terms (no exponent of a cumulative sum that could overflow). With ``reverse``
it solves ``h_t = a_t * h_{t+1} + b_t``, the same way from the end.

``SelectiveScan`` runs it over chunks of ``chunk`` positions, carrying the state from one chunk to
the next. The chunk's tensors of (positions, batch, state, channels) live in four buffers written in
place (time first, so that every position is one contiguous slice): a fresh tensor of that size per
operation would cost more in page faults than the arithmetic. The contractions with C, B and the
gradients are batched products of a row with a (state, channels) matrix over contiguous (position,
batch) pairs: channels last, so that each product is one pass over long rows rather than a
matrix-vector product per channel. Backward is the recurrence's own: the gradient g_t reaching h_t
obeys ``g_t = ∂y_t/∂h_t + a_{t+1} g_{t+1}``, one reverse scan, from which every input's gradient is
a product and a sum. Backward recomputes each chunk from its entering state, so what it keeps is the
inputs and one state per chunk, linear in the length and free of the (batch, seq, state, channels)
terms, and autograd records one node instead of the scan's many.
"""

from __future__ import annotations

import torch
from torch.autograd.function import FunctionCtx, once_differentiable

# the default chunk: on a GPU long chunks mean few kernel launches, and their ends are scanned by
# blocks of blocks; on a CPU a chunk's buffer takes about CPU_CHUNK_BYTES, by torch threads: on one,
# what a core's cache holds; on several, enough that each operation is worth splitting among them
# (results/scan_chunk_cpu/)
GPU_CHUNK = 2048
CPU_CHUNK_BYTES = {"one thread": 512 * 1024, "several": 4 * 1024 * 1024}
BLOCK = 8  # positions per block of ``BlockScan``; a chunk is rounded up to a multiple of it


class BlockScan:
    """``h_t = a_t * h_{t-1} + h_t`` in place along dim 0 of fixed buffers a, h (T, ...), T a multiple of
    ``BLOCK``, from a given entering state (module docstring); ``reverse``: ``h_t = a_t * h_{t+1} + h_t``
    from the end. ``prod`` is scratch space. The views of each step are made once, since the buffers
    serve every chunk."""

    def __init__(self, a: torch.Tensor, h: torch.Tensor, prod: torch.Tensor, reverse: bool = False) -> None:
        ab, hb, pb = (t.unflatten(0, (-1, BLOCK)) for t in (a, h, prod))  # (M, k, ...)
        first, *rest = range(BLOCK - 1, -1, -1) if reverse else range(BLOCK)
        self.first = (pb[:, first], ab[:, first])
        order = [first, *rest]  # each step reads the position before it in this order
        pairs = zip(order[:-1], rest, strict=True)
        self.steps = [(hb[:, t], ab[:, t], hb[:, p], pb[:, p], pb[:, t]) for p, t in pairs]
        last, inner = order[-1], slice(1, None) if reverse else slice(0, -1)  # a block's end, the rest
        ends, end_products = hb[:, last], pb[:, last]  # (M, ...): the recurrence the block ends obey
        blocks = hb.shape[0]
        nested = blocks % BLOCK == 0 and blocks > 4 * BLOCK
        self.ends = (
            BlockScan(end_products, ends, pb.new_empty(ends.shape), reverse)
            if nested
            else SequentialScan(end_products, ends, reverse)
        )
        entered, entering = (
            (slice(None, -1), slice(1, None)) if reverse else (slice(1, None), slice(None, -1))
        )
        self.rest = (hb[entered, inner], pb[entered, inner], ends[entering, None])  # blocks after the first
        edge = -1 if reverse else 0
        self.edge = (hb[edge, inner], pb[edge, inner])  # the first block, which the carry enters

    def __call__(self, carry: torch.Tensor | None) -> None:
        """Runs the scan; carry (...) enters the first block (None: zero)."""
        prod, a = self.first
        prod.copy_(a)
        for h_t, a_t, h_before, prod_before, prod_t in self.steps:  # every block from a zero state
            h_t.addcmul_(a_t, h_before)
            torch.mul(prod_before, a_t, out=prod_t)  # the products of a within the block so far
        self.ends(carry)  # each block's end, now with every state before it
        h_rest, prod_rest, entering = self.rest
        h_rest.addcmul_(prod_rest, entering)  # the entering state, decayed to each position
        if carry is not None:
            h_edge, prod_edge = self.edge
            h_edge.addcmul_(prod_edge, carry[None])


class SequentialScan:
    """``BlockScan``'s recurrence one position after another, for the few block ends of a short
    buffer, in place: a, h (M, ...), M small."""

    def __init__(self, a: torch.Tensor, h: torch.Tensor, reverse: bool = False) -> None:
        order = range(h.shape[0] - 1, -1, -1) if reverse else range(h.shape[0])
        self.steps = [(h[t], a[t]) for t in order]

    def __call__(self, carry: torch.Tensor | None) -> None:
        for h_t, a_t in self.steps:
            if carry is not None:
                h_t.addcmul_(a_t, carry)
            carry = h_t


class ChunkBuffers:
    """The four (positions, batch, state, channels) buffers one scan writes in place, chunk after chunk:
    ``decay`` exp(Δ_t A) with a spare last position of 1 (the reverse scan's a_{t+1} after the chunk,
    which the carried gradient already holds), ``states`` with the entering state first, ``grads`` (the
    gradients reaching h_t) and ``scratch``."""

    def __init__(self, chunk: int, batch: int, channels: int, d_state: int, like: torch.Tensor) -> None:
        self.decay, self.states = (like.new_empty(chunk + 1, batch, d_state, channels) for _ in range(2))
        self.grads, self.scratch = (like.new_empty(chunk, batch, d_state, channels) for _ in range(2))
        self.decay[-1] = 1.0
        self.scan = BlockScan(self.decay[:-1], self.states[1:], self.scratch)
        self.reverse_scan = BlockScan(self.decay[1:], self.grads, self.scratch, reverse=True)

    def run(
        self, u: torch.Tensor, delta: torch.Tensor, A: torch.Tensor, B: torch.Tensor, state: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """One chunk's states from ``state``: u, delta (T, B, E), A (N, E), B (T, B, N), state (B, N, E)
        -> h_t and the step factors exp(Δ_t A), both views of the buffers (T, B, N, E)."""
        decay, h = self.decay[:-1], self.states[1:]
        torch.mul(delta[:, :, None], A, out=decay).exp_()  # exp(Δ A)
        torch.mul((delta * u)[:, :, None], B[..., None], out=h)  # Δ B u
        self.states[0].copy_(state)
        self.scan(state)
        return h, decay


class SelectiveScan(torch.autograd.Function):
    """``selective_scan`` over chunks, time first, with the recurrence's own backward (module
    docstring): u, delta (L, B, E), A (N, E), B, C (L, B, N) -> y (L, B, E); L is a multiple of
    ``chunk``, itself a multiple of ``BLOCK``."""

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
        length, batch, channels = u.shape
        buffers = ChunkBuffers(chunk, batch, channels, A.shape[0], u)
        states = [u.new_zeros(batch, A.shape[0], channels)]  # entering each chunk: (B, N, E)
        y = torch.empty_like(u)  # (L, B, E)
        for start in range(0, length, chunk):
            part = slice(start, start + chunk)
            h, _ = buffers.run(u[part], delta[part], A, B[part], states[-1])
            torch.matmul(C[part, :, None], h, out=y[part, :, None])  # C_t · h_t
            states.append(h[-1].clone())
        ctx.save_for_backward(u, delta, A, B, C, *states[:-1])
        ctx.chunk = chunk
        return y

    @staticmethod
    @once_differentiable
    def backward(ctx: FunctionCtx, grad_y: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        u, delta, A, B, C, *states = ctx.saved_tensors
        _, batch, channels = u.shape
        buffers = ChunkBuffers(ctx.chunk, batch, channels, A.shape[0], u)
        grad_u, grad_delta, grad_B, grad_C = (torch.empty_like(t) for t in (u, delta, B, C))
        grad_A = torch.zeros_like(A)
        carried = torch.zeros_like(states[0])  # the gradient reaching the state leaving the chunk
        grad_y = grad_y.contiguous()
        for index in reversed(range(len(states))):
            part = slice(index * ctx.chunk, (index + 1) * ctx.chunk)
            u_c, delta_c, B_c, C_c, dy = u[part], delta[part], B[part], C[part], grad_y[part]
            h, decay = buffers.run(u_c, delta_c, A, B_c, states[index])
            g = torch.mul(dy[:, :, None], C_c[..., None], out=buffers.grads)  # ∂y_t/∂h_t
            buffers.reverse_scan(carried)
            carried = g[0] * decay[0]
            grad_log_decay = torch.mul(buffers.states[:-1], decay, out=buffers.scratch).mul_(g)  # ∂/∂(Δ_t A)
            grad_A += torch.mul(grad_log_decay, delta_c[:, :, None], out=decay).sum((0, 1))
            grad_x = torch.matmul(B_c[:, :, None], g)[:, :, 0]  # ∂/∂(Δ_t u_t): (T, B, E)
            torch.mul(grad_x, delta_c, out=grad_u[part])
            torch.mul(grad_log_decay, A, out=grad_log_decay)
            torch.addcmul(grad_log_decay.sum(-2), grad_x, u_c, out=grad_delta[part])
            torch.matmul((delta_c * u_c)[:, :, None], g.transpose(-1, -2), out=grad_B[part, :, None])
            torch.matmul(dy[:, :, None], h.transpose(-1, -2), out=grad_C[part, :, None])  # (T, B, 1, N)
        return grad_u, grad_delta, grad_A, grad_B, grad_C, None


def selective_scan(
    u: torch.Tensor,
    delta: torch.Tensor,
    A: torch.Tensor,
    B: torch.Tensor,
    C: torch.Tensor,
    chunk: int | None = None,
) -> torch.Tensor:
    """y_t = C_t · h_t with h_t = exp(Δ_t A) h_{t-1} + Δ_t B_t u_t, h_{-1} = 0, in float32; ``chunk``
    None: ``default_chunk``.

    u, delta: (B, L, E); A: (E, N), real and negative; B, C: (B, L, N) -> y (B, L, E). A step with
    Δ = 0 leaves the state as it is (the mixers give padded positions Δ = 0).
    """
    with torch.autocast(u.device.type, enabled=False):
        chunk = chunk or default_chunk(u, A.shape[1])
        return chunked_scan(*(t.float() for t in (u, delta, A, B, C)), chunk)


def default_chunk(u: torch.Tensor, d_state: int) -> int:
    """Positions per chunk for u (B, L, E): ``GPU_CHUNK`` on a GPU; elsewhere those whose
    (positions, batch, state, channels) float32 buffer fits ``CPU_CHUNK_BYTES`` for the torch
    threads, at least one block."""
    if u.device.type == "cuda":
        return GPU_CHUNK
    budget = CPU_CHUNK_BYTES["one thread" if torch.get_num_threads() == 1 else "several"]
    return max(BLOCK, budget // (u.shape[0] * d_state * u.shape[2] * 4))


def time_first(t: torch.Tensor, pad: int) -> torch.Tensor:
    """(B, L, X) -> a new contiguous (L + pad, B, X), zero after L, whatever t's strides (the
    batched products over its positions need rows in place, and a padding that copies t could keep
    them transposed)."""
    length, batch, rest = t.shape[1], t.shape[0], t.shape[2:]
    out = t.new_empty(length + pad, batch, *rest)
    out[:length].copy_(t.transpose(0, 1))
    out[length:].zero_()
    return out


def chunked_scan(
    u: torch.Tensor, delta: torch.Tensor, A: torch.Tensor, B: torch.Tensor, C: torch.Tensor, chunk: int
) -> torch.Tensor:
    """``selective_scan`` in the inputs' own dtype (``SelectiveScan``): shapes as there. ``chunk`` is
    rounded up to a multiple of ``BLOCK`` and down to the length so rounded; the sequence is padded
    to a multiple of it with steps of Δ = 0, which change no state."""
    length = u.shape[1]
    chunk = min(-(-chunk // BLOCK), -(-length // BLOCK)) * BLOCK
    pad = -length % chunk
    u, delta, B, C = (time_first(t, pad) for t in (u, delta, B, C))
    return SelectiveScan.apply(u, delta, A.t().contiguous(), B, C, chunk).transpose(0, 1)[:, :length]
