"""The encoder's normalisations (``model.norm``) and the S4 repository's exemption of norms and biases
from weight decay (``model.decay_norms_biases: false``)."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn


class SequenceBatchNorm(nn.BatchNorm1d):
    """BatchNorm of each feature over the batch and every position, padding included (S4's
    ``norm: batch``): (B, N, dim) -> (B, N, dim)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x.transpose(1, 2)).transpose(1, 2)


NORMS: dict[str, Callable[[int], nn.Module]] = {"layer": nn.LayerNorm, "batch": SequenceBatchNorm}


def exempt_norms_and_biases(module: nn.Module) -> None:
    """Train the biases and normalisation weights inside ``module`` without weight decay, declared as
    ``_optim`` for ``lra.model.module.parameter_groups`` (the S4 repository's ``add_optimizer_hooks``)."""
    for sub in module.modules():
        for name, parameter in sub.named_parameters(recurse=False):
            if name.endswith("bias") or isinstance(sub, (nn.LayerNorm, nn.BatchNorm1d)):
                parameter._optim = {"weight_decay": 0.0} | getattr(parameter, "_optim", {})
