"""The banded softmax scores shared by ``window`` and ``longformer``: each query's scores with the keys
at most ``side`` positions away, computed chunk by chunk so that memory stays O(N · side), never
(N × N).

The queries are cut into chunks of c = max(⌊side/2⌋, 1) tokens and each chunk's scores are taken
against the c + 2·side keys around it; entries outside the band or at padded keys get ``PAD_SCORE``.
Chunks of side/2 rather than side leave a fifth of the scores outside the band, not a third.
``causal=True`` keeps the band's past half: key j with i − side <= j <= i.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F

PAD_SCORE = torch.finfo(torch.float32).min / 2  # the score of a key outside the band or padded


class Band(NamedTuple):
    """A sequence's band, chunk by chunk: S chunks of c queries, each with its c + 2w keys (w = side).

    queries: (B, H, S, c, D); scores: (B, H, S, c, c + 2w), scaled by 1/√D and ``PAD_SCORE`` outside
    the band or at padded keys; values: (B, H, S, c + 2w, D); length: N, the sequence's length.
    """

    queries: torch.Tensor
    scores: torch.Tensor
    values: torch.Tensor
    length: int


def band_windows(x: torch.Tensor, side: int, chunk: int, chunks: int) -> torch.Tensor:
    """The keys around each chunk: x (..., N, F) -> (..., chunks, chunk + 2·side, F).

    Window s covers positions s·chunk − side … s·chunk + chunk + side − 1; positions outside
    0 … N − 1 are zero rows (the caller marks them as padding).
    """
    length = x.shape[-2]
    padded = F.pad(x, (0, 0, side, chunks * chunk - length + side))
    return padded.unfold(-2, chunk + 2 * side, chunk).transpose(-1, -2)


def band_scores(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, key_ok: torch.Tensor, side: int, causal: bool = False
) -> Band:
    """The band of |i − j| <= ``side`` (at most N − 1; ``causal``: i − side <= j <= i): q, k, v
    (B, H, N, D) float32, key_ok (B, N) bool, True where a key may receive attention (real, and not
    handled elsewhere)."""
    batch, heads, length, dim = q.shape
    side = min(side, length - 1)
    chunk = max(side // 2, 1)
    chunks = -(-length // chunk)

    # the queries in chunks of c: (B, H, S, c, D)
    queries = F.pad(q, (0, 0, 0, chunks * chunk - length)).view(batch, heads, chunks, chunk, dim)
    keys = band_windows(k, side, chunk, chunks)  # (B, H, S, c + 2w, D)
    values = band_windows(v, side, chunk, chunks)  # (B, H, S, c + 2w, D)
    # (B, S, c + 2w): whether each window slot holds a key that may receive attention
    slot_ok = band_windows(key_ok[:, :, None].float(), side, chunk, chunks).squeeze(-1) > 0
    slots = torch.arange(chunk + 2 * side, device=q.device)
    offset = slots[None, :] - torch.arange(chunk, device=q.device)[:, None]
    reach = side if causal else 2 * side  # causal: up to offset w, the query itself
    in_band = (offset >= 0) & (offset <= reach)  # (c, c + 2w): key within w of the query
    allowed = in_band & slot_ok[:, None, :, None, :]  # (B, 1, S, c, c + 2w)
    scores = (queries @ keys.transpose(-1, -2)) * dim**-0.5  # (B, H, S, c, c + 2w)
    scores = scores.masked_fill_(~allowed, PAD_SCORE)  # in place: nothing saved the product
    return Band(queries, scores, values, length)


def unchunk(out: torch.Tensor, length: int) -> torch.Tensor:
    """Chunked rows back to the sequence: (B, H, S, c, D) -> (B, H, N, D)."""
    batch, heads, chunks, chunk, dim = out.shape
    return out.reshape(batch, heads, chunks * chunk, dim)[:, :, :length]


def band_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, real: torch.Tensor, side: int, causal: bool = False
) -> torch.Tensor:
    """Softmax attention within the band |i − j| <= ``side`` (``causal``: its past half): float32 q, k,
    v (B, H, N, D) and real (B, N) bool -> (B, H, N, D). A query with no real key in its band gets a
    finite average."""
    band = band_scores(q, k, v, real, side, causal)
    return unchunk(torch.softmax(band.scores, dim=-1) @ band.values, band.length)  # (B, H, N, D)
