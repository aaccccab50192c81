"""Feature maps of linear attention: φ such that φ(q)·φ(k) is a kernel of q and k, computed without
the (N × N) matrix of its values.

``taylor_features``: Based's second-order Taylor map (Arora et al. 2024; Zoology's ``TaylorExp``,
``zoology/mixers/feature_maps/taylor.py:9-41``; fla's ``TaylorFeatureMap``,
``fla/modules/feature_map.py:204-217``),
φ(x)·φ(y) = 1 + x·y/√d + (x·y)²/(2d), the Taylor expansion of exp(x·y/√d) to second order, for x of
d dimensions. Its features: the constant 1, x/d^¼, and the d(d+1)/2 distinct products x_i x_j, the
squares over √(2d) and each product i < j over √d (the pair (i, j) and (j, i) of the full outer
product, whose two terms over √(2d) each sum to one over √d). That is 1 + d + d(d+1)/2 features, the
size Zoology counts as the map's state (``expanded_size``, l. 40-41), in the order of its
``forward_mem_save`` (l. 27-38) up to a permutation of the products.
"""

from __future__ import annotations

import math

import torch


def taylor_size(d: int) -> int:
    """The number of Taylor features of d dimensions: 1 + d + d(d+1)/2."""
    return 1 + d + d * (d + 1) // 2


def taylor_features(x: torch.Tensor) -> torch.Tensor:
    """φ(x) of the module docstring: x (..., d) -> (..., 1 + d + d(d+1)/2), in x's dtype."""
    d = x.shape[-1]
    rows, cols = torch.triu_indices(d, d, device=x.device)  # i <= j, the diagonal first in each row
    products = x[..., rows] * x[..., cols]  # (..., d(d+1)/2)
    weights = torch.full(rows.shape, 1 / math.sqrt(d), dtype=x.dtype, device=x.device)
    weights[rows == cols] = 1 / math.sqrt(2 * d)  # the squares
    return torch.cat([torch.ones_like(x[..., :1]), x / d**0.25, products * weights], dim=-1)
