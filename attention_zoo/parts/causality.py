"""What the causal forms share: the causal key mask of the exact attentions, and the one line that
refuses an option value without a causal form.

Under ``causal=True`` output position i depends on positions j <= i only (docs/attentions.md § The
causal mode); padded positions stay invisible as without it.
"""

from __future__ import annotations

from typing import Any

import torch


def causal_keys(length: int, device: torch.device, extra_keys: int = 0) -> torch.Tensor:
    """Whether query i may see key j: (N, N + extra_keys) bool, j <= i, and True on the extra keys
    appended after the N positions (which every query sees)."""
    positions = torch.arange(length, device=device)
    allowed = positions[None, :] <= positions[:, None]  # (N, N)
    return torch.cat([allowed, allowed.new_ones(length, extra_keys)], dim=-1)


def causal_padding_bias(mask: torch.Tensor | None, length: int, dtype: torch.dtype, device: torch.device):
    """Additive bias (B or 1, 1, N, N): 0 where key j <= query i is real, a large negative finite
    value elsewhere (finite, so a row without a visible key stays free of NaN)."""
    allowed = causal_keys(length, device)[None, None]  # (1, 1, N, N)
    if mask is not None:
        allowed = allowed & mask[:, None, None, :]  # (B, 1, N, N)
    bias = torch.zeros(allowed.shape, dtype=dtype, device=device)
    return bias.masked_fill_(~allowed, torch.finfo(dtype).min / 2)


def spelled(value: Any) -> str:
    """A value as a config spells it: ``false``, ``0``, ``0.0``."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def require_for_causal(name: str, causal: bool, option: str, value: Any, needed: Any) -> None:
    """Under ``causal``, one ``ValueError`` line unless ``option`` is ``needed`` (the value whose
    form is causal): ``attention 's4d': causal=True needs bidirectional=false, got true``."""
    if causal and value != needed:
        raise ValueError(
            f"attention {name!r}: causal=True needs {option}={spelled(needed)}, got {spelled(value)}"
        )
