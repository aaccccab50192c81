"""Segment-mean landmarks (Nyströmformer): the means of contiguous, near-equal segments of a sequence.

``padded_landmarks(x, mask, count)`` zeroes the padded positions of x (B, H, N, D) and takes its
segment means (B, H, count, D) in one autograd node. Its backward spreads the means' gradient over
their segments, adds it to the gradient of the zeroed tensor and masks the sum in place: one new
(B, H, N, D) tensor, where the same composition of ``zero_padding`` and ``segment_means`` under
autograd makes three (the spread broadcast, the sum, the masked sum). Its zeroed tensor is
(B, H, N, D)-contiguous, the layout the CPU flash attention runs fastest on.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.autograd.function import FunctionCtx, once_differentiable


def segment_bounds(n: int, count: int, device: torch.device) -> torch.Tensor:
    """⌈i·n/count⌉ for i = 0 … count: segment i spans positions bounds[i] … bounds[i+1] − 1. (count + 1,)"""
    return (torch.arange(count + 1, device=device) * n + count - 1) // count


def segment_means(x: torch.Tensor, count: int) -> torch.Tensor:
    """Means of ``count`` contiguous, near-equal segments of the sequence: (..., n, d) -> (..., count, d).

    Position j belongs to segment ⌊j·count/n⌋, so segment i spans positions ⌈i·n/count⌉ to
    ⌈(i+1)·n/count⌉ − 1: sizes differ by at most one and none is empty when count <= n.
    When count divides n this is a reshape and a sum; otherwise each segment is read as the
    ⌈n/count⌉ slots from its start, a short segment's last slot pointing at an appended zero row,
    and each slot sum is divided by its segment's true size (O(n·d), no (count × n) matrix).
    """
    n = x.shape[-2]
    if n % count == 0:
        # a sum scaled afterwards: its backward is a broadcast view, where mean's materialises (n, d)
        return x.unflatten(-2, (count, n // count)).sum(dim=-2) * (count / n)
    bounds = segment_bounds(n, count, x.device)
    start, size = bounds[:-1], bounds.diff()
    slots = start[:, None] + torch.arange(-(-n // count), device=x.device)  # (count, ⌈n/count⌉)
    slots = torch.where(slots < bounds[1:, None], slots, n)  # n: the appended zero row
    gathered = F.pad(x, (0, 0, 0, 1)).index_select(-2, slots.flatten())  # (..., count·⌈n/count⌉, d)
    return gathered.unflatten(-2, tuple(slots.shape)).sum(dim=-2) / size[:, None].to(x.dtype)


def add_segment_gradient(grad: torch.Tensor, grad_means: torch.Tensor) -> torch.Tensor:
    """``grad`` plus the gradient that ``segment_means`` passes back for ``grad_means``: every position
    gets its segment's gradient divided by the segment's size. (..., n, d), (..., count, d) -> a new
    (..., n, d) tensor, contiguous."""
    n, count = grad.shape[-2], grad_means.shape[-2]
    if n % count == 0:
        spread = grad_means.unsqueeze(-2) * (count / n)  # (..., count, 1, d), broadcast in the sum
        return (grad.unflatten(-2, (count, n // count)) + spread).flatten(-3, -2)
    bounds = segment_bounds(n, count, grad.device)
    segment = (torch.arange(n, device=grad.device) * count) // n  # (n,): ⌊j·count/n⌋
    per_position = grad_means / bounds.diff()[:, None].to(grad_means.dtype)  # (..., count, d)
    return grad + per_position.index_select(-2, segment)


class PaddedSegmentMeans(torch.autograd.Function):
    """x (B, H, N, D), mask (B, N) bool or None, count -> (x with padded positions zeroed, laid out
    (B, H, N, D)-contiguous whatever x's strides; its segment means (B, H, count, D))."""

    @staticmethod
    def forward(
        ctx: FunctionCtx, x: torch.Tensor, mask: torch.Tensor | None, count: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        zeroed = torch.empty(x.shape, dtype=x.dtype, device=x.device)
        if mask is None:
            zeroed.copy_(x)
        else:
            torch.mul(x, mask[:, None, :, None].to(x.dtype), out=zeroed)
        ctx.save_for_backward(mask)
        return zeroed, segment_means(zeroed, count)

    @staticmethod
    @once_differentiable
    def backward(
        ctx: FunctionCtx, grad_zeroed: torch.Tensor, grad_means: torch.Tensor
    ) -> tuple[torch.Tensor, None, None]:
        (mask,) = ctx.saved_tensors
        grad = add_segment_gradient(grad_zeroed, grad_means)
        if mask is not None:
            grad.mul_(mask[:, None, :, None].to(grad.dtype))
        return grad, None, None


def padded_landmarks(
    x: torch.Tensor, mask: torch.Tensor | None, count: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """``zero_padding(x, mask)`` as a (B, H, N, D)-contiguous tensor, and ``segment_means`` of it:
    x (B, H, N, D), mask (B, N) bool or None -> ((B, H, N, D), (B, H, count, D))."""
    return PaddedSegmentMeans.apply(x, mask, count)
