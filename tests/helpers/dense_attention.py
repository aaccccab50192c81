"""Dense references for the sparse and banded cores: softmax attention under an (N × N) mask, and the
comparison of a core with its reference in value and gradient (float32 against float64)."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch


def masked_softmax_attention(q, k, v, allowed: torch.Tensor) -> torch.Tensor:
    """softmax(QKᵀ/√d) V with weight only where ``allowed`` (broadcast to (B, H, N, N)); a row with
    nothing allowed (a padded query) is a finite average instead of NaN."""
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    return torch.softmax(scores.masked_fill(~allowed, torch.finfo(q.dtype).min), dim=-1) @ v


def assert_matches(core: Callable[..., torch.Tensor], reference: Callable[..., torch.Tensor], inputs, mask):
    """Value and gradient of q, k, v at real positions agree to a relative 1e-5 (an absolute 1e-9 where
    the gradient is zero: a window of one token gives q and k none)."""
    real = mask[:, None, :, None]
    weight = torch.randn(inputs[0].shape, generator=torch.Generator().manual_seed(7))
    results = []
    for function, dtype in ((core, torch.float32), (reference, torch.float64)):
        leaves = [x.detach().to(dtype).requires_grad_(True) for x in inputs]
        out = function(*leaves) * real
        (out * weight.to(dtype)).sum().backward()
        results.append([out.double(), *(leaf.grad.double() for leaf in leaves)])
    for label, ours, theirs in zip(("out", "dq", "dk", "dv"), *results, strict=True):
        error = (ours - theirs).norm()
        assert error <= 1e-5 * theirs.norm() + 1e-9, f"{label}: error {error:.2e}, norm {theirs.norm():.2e}"
