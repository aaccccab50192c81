"""Learning-rate schedules, by the name ``protocol.schedule`` gives them; each is stepped after every
optimizer step.

- ``warmup_linear`` (the task default): the learning rate rises linearly over the first ``warmup``
  steps, ``lr · (s + 1) / warmup``, then falls linearly to 0 at ``total`` steps.
- ``warmup_constant`` (self-pretraining, Amos et al.): the same warm-up, then ``lr`` to the end.
- ``warmup_cosine_hf`` (the S4 repository's ``cosine_warmup``, transformers'
  ``get_cosine_schedule_with_warmup``): ``s / warmup`` during the warm-up (0 at the first step), then
  ``½(1 + cos(π · (s - warmup) / (total - warmup)))``, half a cosine down to 0 at ``total`` (and up
  again after it, as theirs).
- ``one_cycle`` (the Skyformer and Nyströmformer authors' code): torch's ``OneCycleLR`` with
  ``max_lr = lr`` (each parameter group's own), ``pct_start = warmup / total``, linear annealing and
  its other defaults: from ``lr / 25`` up to ``lr`` at step ``warmup``, then down to
  ``lr / (25 · 10⁴)`` at ``total``; with ``cycle_momentum`` it also moves AdamW's β₁ from 0.95 down
  to 0.85 at the peak and back to 0.95.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from torch.optim import Optimizer
from torch.optim.lr_scheduler import LambdaLR, LRScheduler, OneCycleLR

ScheduleBuilder = Callable[[Optimizer, float, int, int], LRScheduler]


def warmup_linear(optimizer: Optimizer, lr: float, warmup: int, total: int) -> LRScheduler:
    """Linear warm-up over ``warmup`` steps, then linear decay to 0 at ``total`` (factor of ``lr``)."""

    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        return max(0.0, (total - step) / max(1, total - warmup))

    return LambdaLR(optimizer, factor)


def warmup_constant(optimizer: Optimizer, lr: float, warmup: int, total: int) -> LRScheduler:
    """Linear warm-up over ``warmup`` steps, then constant (factor of ``lr``; ``total`` is not used)."""
    return LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / warmup) if warmup else 1.0)


def warmup_cosine_hf(optimizer: Optimizer, lr: float, warmup: int, total: int) -> LRScheduler:
    """transformers' ``get_cosine_schedule_with_warmup`` (half a cycle), as the S4 repository's LRA
    configs schedule (module docstring)."""

    def factor(step: int) -> float:
        if step < warmup:
            return step / warmup
        progress = (step - warmup) / max(1, total - warmup)
        return max(0.0, 0.5 * (1.0 + math.cos(math.pi * progress)))

    return LambdaLR(optimizer, factor)


def one_cycle(optimizer: Optimizer, lr: float, warmup: int, total: int) -> LRScheduler:
    """``OneCycleLR`` as the authors configure it (see the module docstring); needs ``warmup <= total``."""
    peaks = [group["lr"] for group in optimizer.param_groups]  # ``lr``, or what a group declares
    return OneCycleLR(
        optimizer, max_lr=peaks, total_steps=total, pct_start=warmup / total, anneal_strategy="linear"
    )


SCHEDULES: dict[str, ScheduleBuilder] = {
    "warmup_linear": warmup_linear,
    "warmup_constant": warmup_constant,
    "one_cycle": one_cycle,
    "warmup_cosine_hf": warmup_cosine_hf,
}


def build_schedule(name: str, optimizer: Optimizer, lr: float, warmup: int, total: int) -> LRScheduler:
    """The schedule ``name`` over ``optimizer``; a ``ValueError`` listing the valid names if unknown."""
    if name not in SCHEDULES:
        raise ValueError(f"unknown schedule {name!r}; valid schedules: {', '.join(SCHEDULES)}")
    return SCHEDULES[name](optimizer, lr, warmup, total)
