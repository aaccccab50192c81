"""The classifier head's options (``model.*`` in the config): how the encoder's token states are pooled
into one vector, how Retrieval combines its two documents' vectors, and the activation between the
classifier's hidden layers. ``lra.model`` builds the head from them; ``lra.job.checks`` names their keys.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn


def mean_pool(states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The mean of the token states over the real positions: (B, N, dim), mask (B, N) -> (B, dim)."""
    weights = mask.to(states.dtype)[..., None]  # (B, N, 1)
    return (states * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1.0)


def first_pool(states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The first position's state (the CLS token's, when the encoder has one): (B, N, dim) -> (B, dim)."""
    return states[:, 0]


def max_pool(states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The largest state of each feature over the real positions: (B, N, dim), mask (B, N) -> (B, dim)."""
    return states.masked_fill(~mask[..., None], float("-inf")).amax(dim=1)


Pair = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
POOLINGS: dict[str, Pair] = {"mean": mean_pool, "first": first_pool, "max": max_pool}
# The activation after each hidden layer of the classifier.
ACTIVATIONS: dict[str, type[nn.Module]] = {"relu": nn.ReLU, "gelu": nn.GELU}
# How Retrieval combines the documents' vectors u, v (B, dim) -> (B, factor * dim): name -> (combine, factor).
DUAL_FEATURES: dict[str, tuple[Pair, int]] = {
    "nli": (lambda u, v: torch.cat([u, v, u * v, u - v], dim=-1), 4),
    "concat": (lambda u, v: torch.cat([u, v], dim=-1), 2),
}
