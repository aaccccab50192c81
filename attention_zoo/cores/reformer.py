"""Reformer attention, lite (Kitaev et al. 2020): shared-QK LSH attention, no reversible layers.

Each token's shared query-key vector is hashed into buckets by random rotations (angular LSH), the
sequence is sorted by bucket and cut into chunks, and each query attends to the keys of its own chunk
and of the one before it; several hash rounds are combined into one softmax. Memory is
O(N · chunk_size) per round: no (N × N) matrix.

Causal: the paper's decoder masking (Kitaev et al. 2020, §2 "Causal masking for shared-QK
attention"): a query attends to no key after it, its own key still only when nothing else is there.
Cutting the sorted sequence into chunks would let a later token, by its bucket, shift an earlier one
across a chunk boundary and so change which earlier keys it sees; so causal chunks are cut within each
bucket, a token's chunk being its rank among the earlier tokens of its bucket, and a query attends to
the earlier keys of its bucket in its chunk and the one before (``causal_window``). Which keys a
query sees then depends on earlier tokens only, as when decoding one token at a time.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from attention_zoo.parts.masking import check_inputs, real_tokens
from attention_zoo.registry import PositiveInt, register_attention
from attention_zoo.state_sizes import every_key_and_value

SELF_SCORE = -1e5  # a token's score with itself: loses to any other real key, beats padding
PAD_SCORE = torch.finfo(torch.float32).min  # padded keys (and the missing chunk before the first)


def lsh_buckets(shared: torch.Tensor, real: torch.Tensor, rotations: torch.Tensor) -> torch.Tensor:
    """Angular LSH buckets (B, H, rounds, L) of shared (B, H, L, D); real: (B, L) bool.

    rotations: (H, rounds, D, n_buckets/2). Real positions get argmax([sR; −sR]) in
    [0, n_buckets); padded positions get n_buckets, a bucket after every real one.
    """
    rotated = torch.einsum("bhld,hrdk->bhrlk", shared, rotations)
    buckets = torch.cat([rotated, -rotated], dim=-1).argmax(dim=-1)
    return buckets.masked_fill(~real[:, None, None, :], 2 * rotations.shape[-1])


def sort_by_bucket(buckets: torch.Tensor) -> torch.Tensor:
    """Positions (B, H, rounds, L) ordered by (bucket, position) for buckets (B, H, rounds, L)."""
    length = buckets.shape[-1]
    positions = torch.arange(length, device=buckets.device)
    return (buckets * length + positions).argsort(dim=-1)


def gather_positions(x: torch.Tensor, order: torch.Tensor) -> torch.Tensor:
    """x (B, H, L, F) taken in each round's order (B, H, rounds, L) -> (B, H, rounds, L, F)."""
    expanded = x[:, :, None].expand(-1, -1, order.shape[2], -1, -1)
    return expanded.gather(3, order[..., None].expand(-1, -1, -1, -1, x.shape[-1]))


def with_previous_chunks(x: torch.Tensor, count: int) -> torch.Tensor:
    """(..., chunks, c, F) -> (..., chunks, (count + 1)·c, F): each chunk preceded by the ``count``
    before it (the first chunks by the last ones: the caller masks those)."""
    return torch.cat([*(x.roll(back, dims=-3) for back in range(count, 0, -1)), x], dim=-2)


def causal_window(sorted_buckets: torch.Tensor, chunk_size: int) -> torch.Tensor:
    """Which keys of the window (two chunks back and its own) each query of the sorted order may see
    causally: sorted_buckets (B, H, rounds, L) -> (B, H, rounds, chunks, c, 3c) bool.

    Key and query share a bucket, the key's chunk within the bucket (rank in the bucket // c) is the
    query's or the one before, and the key comes no later (slots of a bucket follow positions); its
    window slot is no wrap-around. The keys so allowed lie within 2c − 1 slots before the query.
    """
    length = sorted_buckets.shape[-1]
    chunks = length // chunk_size
    slot = torch.arange(length, device=sorted_buckets.device)
    starts = torch.ones_like(sorted_buckets, dtype=torch.bool)
    starts[..., 1:] = sorted_buckets[..., 1:] != sorted_buckets[..., :-1]  # a bucket's first slot
    first = torch.where(starts, slot, 0).cummax(-1).values  # its bucket's first slot: (B, H, R, L)
    labels = torch.stack([sorted_buckets, (slot - first) // chunk_size, slot.expand_as(first)], dim=-1)
    query = labels.view(*labels.shape[:-2], chunks, chunk_size, 3)  # (B, H, R, chunks, c, 3)
    key = with_previous_chunks(query, 2)  # (B, H, R, chunks, 3c, 3)
    back = torch.arange(3 * chunk_size, device=slot.device) // chunk_size - 2  # -2, -1, 0 per slot
    exists = torch.arange(chunks, device=slot.device)[:, None] + back >= 0  # (chunks, 3c): no wrap
    q_bucket, q_chunk, q_slot = (label[..., :, None] for label in query.unbind(-1))  # (…, c, 1)
    k_bucket, k_chunk, k_slot = (label[..., None, :] for label in key.unbind(-1))  # (…, 1, 3c)
    allowed = (q_bucket == k_bucket) & (k_chunk >= q_chunk - 1) & (k_slot <= q_slot)  # (…, c, 3c)
    return allowed & exists[:, None, :]


@register_attention("reformer", approximates="standard", causal=True)
class ReformerAttention(nn.Module):
    """Shared-QK LSH attention. q, k, v: (B, H, N, D) -> (B, H, N, D); float32 inside.

    Shared query-key vectors. The paper projects each token once, s = x W_qk, and uses s as query
    and (unit-normalised) as key. The contract hands the core separate q = x W_q and k = x W_k, so
    this core uses s = q + k = x (W_q + W_k): exactly one shared projection, parametrised through
    the wrapper's two projections, so gradients reach both q and k.

    Per hash round, with random rotations R: (d, n_buckets/2) drawn from torch's global RNG in each
    forward (shared across the batch, one per head and round):

    1. bucket = argmax([sR; −sR]) (angular LSH); padded positions go to an extra bucket after all
       real ones, so they never change which real tokens share a chunk;
    2. a stable sort by (bucket, position), cut into chunks of ``chunk_size``;
    3. each query attends to the keys of its own chunk and of the previous one (the first chunk
       has none before it); keys are the unit-normalised shared vectors, scores s_i·ŝ_j/√d;
       padded keys are masked, and a token's score with itself is a large negative finite value,
       so it attends to itself only when nothing else is available.

    The rounds are combined with weights softmax over rounds of each round's logsumexp, i.e. as
    one softmax over the keys of all rounds' windows, a key counted once per round that sees it.
    As in the paper (m = 2l / n_buckets), the number of buckets is 2 · ceil(N / chunk_size) for an
    input of (padded) length N, so a bucket holds half a chunk on average. Lengths that are not a
    multiple of chunk_size are padded internally, and those positions are treated as padded tokens.

    No ``attention_dropout``: the papers' code (HuggingFace ``LSHSelfAttention`` with a default
    ``ReformerConfig``, whose ``lsh_attention_probs_dropout_prob`` is 0) drops nothing of the
    chunk-local attention matrices.

    State size: every position's key and value, 2 · seq_len · dim, causal or not: a query's buckets
    may hold any earlier key, so all are kept.

    No rotary positions (``attention_zoo.parts.rotary``): the buckets, argmax([sR; −sR]), depend on each
    vector's orientation against the drawn rotations R, not only on dot products between q and k.
    Shifting every position turns all of q and k by one common rotation, which leaves every q·k as it
    is but, for a given R, changes the buckets and the output: the relative-position property of
    rotary embeddings does not hold.
    """

    def __init__(
        self,
        *,
        head_dim: int,
        num_heads: int,
        seq_len: int,
        n_hashes: PositiveInt = 2,
        chunk_size: PositiveInt = 64,
        causal: bool = False,
    ) -> None:
        super().__init__()
        self.head_dim = head_dim
        self.num_heads = num_heads
        self.n_hashes = n_hashes
        self.chunk_size = chunk_size
        self.causal = causal

    state_size = staticmethod(every_key_and_value)

    def draw_rotations(self, length: int, device: torch.device | None = None) -> torch.Tensor:
        """Random rotations (H, n_hashes, D, n_buckets/2) for inputs of length N, from the global RNG.

        n_buckets = 2 · ceil(N / chunk_size).
        """
        num_chunks = -(-length // self.chunk_size)
        return torch.randn(self.num_heads, self.n_hashes, self.head_dim, num_chunks, device=device)

    def forward(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        check_inputs(q, k, v, mask)
        batch, heads, length, dim = q.shape
        num_chunks = -(-length // self.chunk_size)
        padded_length = num_chunks * self.chunk_size
        extra = padded_length - length
        real = F.pad(real_tokens(q, mask), (0, extra), value=False)
        with torch.autocast(device_type=q.device.type, enabled=False):
            shared = F.pad((q + k).float(), (0, 0, 0, extra))  # (B, H, L, D)
            values = F.pad(v.float(), (0, 0, 0, extra))  # (B, H, L, D)
            rotations = self.draw_rotations(length, q.device)  # (H, rounds, D, n_buckets/2)
            buckets = lsh_buckets(shared, real, rotations)  # (B, H, rounds, L)
            order = sort_by_bucket(buckets)  # (B, H, rounds, L)
            window = causal_window(buckets.gather(-1, order), self.chunk_size) if self.causal else None
            out, lse = self._attend_in_chunks(shared, values, real, order, window)  # (B, H, R, L, D), (…, L)
            inverse = order.argsort(dim=-1)  # (B, H, rounds, L): sorted slot of each position
            out = out.gather(3, inverse[..., None].expand_as(out))  # back to original positions
            lse = lse.gather(-1, inverse)
            round_weights = torch.softmax(lse, dim=2)[..., None]  # (B, H, rounds, L, 1)
            out = (round_weights * out).sum(dim=2)[:, :, :length]
        return out.to(q.dtype)

    def _attend_in_chunks(
        self,
        shared: torch.Tensor,
        values: torch.Tensor,
        real: torch.Tensor,
        order: torch.Tensor,
        causal_window: torch.Tensor | None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Attention within chunks of the sorted order: a chunk and the one before, or with
        ``causal_window`` (B, H, rounds, chunks, c, 3c) the two before, those keys it allows.

        shared, values: (B, H, L, D); real: (B, L); order: (B, H, rounds, L).
        Returns out (B, H, rounds, L, D) and logsumexp (B, H, rounds, L), both in sorted order.
        """
        batch, heads, rounds, length = order.shape
        chunks, size = length // self.chunk_size, self.chunk_size
        chunked = (batch, heads, rounds, chunks, size)

        back = 1 if causal_window is None else 2  # chunks before each chunk in its window: w = (back + 1)c
        queries = gather_positions(shared, order).view(*chunked, -1)  # (B, H, rounds, chunks, c, D)
        keys = with_previous_chunks(F.normalize(queries, dim=-1), back)  # (B, H, rounds, chunks, w, D)
        window_values = with_previous_chunks(gather_positions(values, order).view(*chunked, -1), back)
        query_pos = order.view(*chunked)  # (B, H, rounds, chunks, c)
        key_pos = with_previous_chunks(query_pos[..., None], back).squeeze(-1)  # (B, H, rounds, chunks, w)
        key_real = real[:, None, None, :].expand(-1, heads, rounds, -1).gather(-1, order).view(*chunked)
        key_real = with_previous_chunks(key_real[..., None], back).squeeze(-1)[..., None, :]  # (…, 1, w)
        if causal_window is None:
            in_own_chunk = torch.arange(2 * size, device=order.device)[None, :] >= size  # (1, 2c)
            slot_exists = in_own_chunk | (
                torch.arange(chunks, device=order.device)[:, None] > 0
            )  # (chunks, 2c)
            key_ok = key_real & slot_exists[:, None, :]  # (B, H, rounds, chunks, 1, 2c)
        else:
            key_ok = key_real & causal_window  # (B, H, rounds, chunks, c, 3c)

        scores = queries @ keys.transpose(-1, -2) * self.head_dim**-0.5  # (B, H, rounds, chunks, c, w)
        scores = scores.masked_fill(query_pos[..., :, None] == key_pos[..., None, :], SELF_SCORE)
        scores = scores.masked_fill(~key_ok, PAD_SCORE)
        lse = scores.logsumexp(dim=-1, keepdim=True)  # (B, H, rounds, chunks, c, 1)
        out = torch.exp(scores - lse) @ window_values  # (B, H, rounds, chunks, c, D)
        return out.view(batch, heads, rounds, length, -1), lse.view(batch, heads, rounds, length)
