"""Helpers shared by the cores: the key-padding mask, the input contract, float32 computation.

mask: (batch, seq) bool, True = real token; None means every position is real.
"""

from __future__ import annotations

from collections.abc import Callable

import torch


def zero_padding(x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """Zero the padded positions of x: (batch, heads, seq, d) -> same shape."""
    if mask is None:
        return x
    return x * mask[:, None, :, None].to(x.dtype)


def key_padding_bias(mask: torch.Tensor | None, dtype: torch.dtype) -> torch.Tensor | None:
    """Additive bias (batch, 1, 1, seq): 0 at real keys, a large negative value at padded keys.

    A finite value rather than -inf keeps rows whose keys are all padded free of NaN.
    """
    if mask is None:
        return None
    bias = torch.zeros(mask.shape, dtype=dtype, device=mask.device)
    bias.masked_fill_(~mask, torch.finfo(dtype).min / 2)
    return bias[:, None, None, :]


def check_inputs(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None) -> None:
    """Raise ``ValueError`` when q, k, v, mask do not follow the attention contract."""
    if q.dim() != 4 or q.shape != k.shape or k.shape[:3] != v.shape[:3]:
        raise ValueError(
            "q, k, v must be (batch, heads, seq, head_dim) with matching shapes, got "
            f"{tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}"
        )
    if mask is not None and (mask.dtype != torch.bool or mask.shape != (q.shape[0], q.shape[2])):
        raise ValueError(
            f"mask must be bool (batch, seq) = {(q.shape[0], q.shape[2])}, "
            f"got {mask.dtype} {tuple(mask.shape)}"
        )


def real_tokens(q: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """The mask of q (batch, heads, seq, d) as (batch, seq) bool, all True when mask is None."""
    if mask is not None:
        return mask
    return torch.ones(q.shape[0], q.shape[2], dtype=torch.bool, device=q.device)


def attend_in_float32(
    attend: Callable[..., torch.Tensor], q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *args: object
) -> torch.Tensor:
    """``attend(q, k, v, *args)`` on float32 copies with autocast off, the result in q's dtype:
    (B, H, N, D) in and out, for cores whose kernels, sums or inverses need float32 under bf16/fp16."""
    with torch.autocast(device_type=q.device.type, enabled=False):
        out = attend(q.float(), k.float(), v.float(), *args)
    return out.to(q.dtype)
