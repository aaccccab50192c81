"""The ``kernel`` option of the modern mixers: whether a core runs fla's chunk kernels (Triton, CUDA
only: flash-linear-attention, the ``fla`` extra) or the plain PyTorch forms of ``attention_zoo.parts``,
and the calls into fla's kernels.

``kernel``: ``auto`` runs fla's kernel on CUDA tensors when fla is installed and computes correctly
there (``fla_fits``), and the PyTorch form otherwise; ``fla`` always runs fla's and is refused in one
line without fla, without a CUDA GPU, or on tensors elsewhere; ``torch`` always runs the PyTorch form.
fla is imported only when its kernel runs (or ``kernel=fla`` is checked), so nothing here needs it
installed.

fla's chunk kernels take every tensor in the tokens' layout [B, T, H, D] and the decay as per-step
log decays (``g``), which is the layout of the PyTorch forms here too: one call site serves both.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from typing import Literal

import torch

Kernel = Literal["auto", "fla", "torch"]
INSTALL = 'pip install -e ".[fla]"'


def fla_import_error() -> str | None:
    """Why fla's kernels cannot be imported (the ImportError's text), or None when they can."""
    try:
        importlib.import_module("fla.ops")
    except ImportError as error:
        return str(error)
    return None


def check_kernel(name: str, kernel: Kernel) -> None:
    """At construction: a one-line ``ValueError`` naming ``name`` when ``kernel=fla`` cannot run here,
    without fla (naming its install command) or without a CUDA GPU."""
    if kernel != "fla":
        return
    missing = fla_import_error()
    if missing is not None:
        raise ValueError(
            f"attention {name!r}: kernel=fla needs flash-linear-attention ({missing}): {INSTALL}"
        )
    if not torch.cuda.is_available():
        raise ValueError(
            f"attention {name!r}: kernel=fla needs a CUDA GPU and none is present; "
            "kernel=torch or auto runs here"
        )


def runs_fla(name: str, kernel: Kernel, device: torch.device) -> bool:
    """Whether a core of ``name`` on tensors on ``device`` runs fla's kernel: ``auto`` on CUDA with fla
    installed where it fits the GPU (``fla_fits``), ``fla`` always (a one-line ``ValueError`` on tensors
    off CUDA; fla's own error where it refuses the GPU), ``torch`` never."""
    if kernel == "torch":
        return False
    if kernel == "fla" and device.type != "cuda":
        raise ValueError(f"attention {name!r}: kernel=fla runs on CUDA tensors, got {device.type} tensors")
    if kernel == "fla":
        return True
    return device.type == "cuda" and fla_import_error() is None and fla_fits(device)


def fla_fits(device: torch.device) -> bool:
    """Whether fla's kernels compute correctly on the CUDA ``device``: fla 0.6 refuses the gated
    backward on Hopper GPUs (compute capability 9) with Triton from 3.4.0 below 3.7.1, where Triton gives
    wrong results, unless tilelang serves it (flash-linear-attention issue 640,
    ``fla/ops/common/chunk_o.py``)."""
    if torch.cuda.get_device_capability(device)[0] != 9 or importlib.util.find_spec("tilelang"):
        return True
    import triton
    from packaging.version import Version

    return not Version("3.4.0") <= Version(triton.__version__) < Version("3.7.1")


def fla_function(module: str, function: str) -> Callable[..., tuple[torch.Tensor, torch.Tensor | None]]:
    """``fla.ops.<module>.<function>``, imported when first needed."""
    return getattr(importlib.import_module(f"fla.ops.{module}"), function)


def fla_gated_linear_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor | None, scale: float
) -> torch.Tensor:
    """fla's chunk kernel of o_t = scale · q_tᵀ S_t, S_t = diag(exp(g_t)) S_{t-1} + k_t v_tᵀ:
    ``chunk_gla`` for a vector decay g (B, T, H, K), ``chunk_simple_gla`` for a scalar one (B, T, H) or
    none. q, k (B, T, H, K) or (B, T, 1, K) (one for every head), v (B, T, H, V) -> (B, T, H, V) in
    v's dtype."""
    heads = (-1, -1, v.shape[2], -1)
    q, k, v = (t.expand(heads).contiguous() for t in (q, k, v))
    if g is not None and g.dim() == 4:
        out, _ = fla_function("gla", "chunk_gla")(q, k, v, g.float().contiguous(), scale=scale)
    else:
        decay = None if g is None else g.float().contiguous()
        out, _ = fla_function("simple_gla", "chunk_simple_gla")(q, k, v, g=decay, scale=scale)
    return out.to(v.dtype)
