"""The CUDA tests against fla's kernels skip on a GPU where fla refuses to run them: fla 0.6's gated
backward on Hopper with Triton 3.4.0 to 3.7.0 (``attention_zoo.parts.fla_kernels.fla_fits``)."""

from __future__ import annotations

import importlib.util

import pytest
import torch

from attention_zoo.parts.fla_kernels import fla_fits


def fla_refuses_this_gpu() -> bool:
    if not torch.cuda.is_available() or importlib.util.find_spec("triton") is None:
        return False
    return not fla_fits(torch.device("cuda"))


needs_fla_on_this_gpu = pytest.mark.skipif(
    fla_refuses_this_gpu(), reason="fla 0.6 refuses its gated backward on this GPU's Triton (its issue 640)"
)
