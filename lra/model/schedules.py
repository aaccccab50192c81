"""Learning-rate schedules, by the name ``protocol.schedule`` gives them; each is stepped after every
optimizer step.

- ``warmup_linear`` (the task default): the learning rate rises linearly over the first ``warmup``
  steps, ``lr · (s + 1) / warmup``, then falls linearly to 0 at ``total`` steps.
- ``warmup_constant`` (self-pretraining, Amos et al.): the same warm-up, then ``lr`` to the end.
- ``warmup_constant_from_zero`` (Amos et al.'s code: transformers' ``get_constant_schedule_with_warmup``):
  a factor ``min(1, s / warmup)`` of ``lr``, so the first step's rate is 0, then ``lr`` to the end.
- ``warmup_rsqrt`` (the LRA code's ``constant * linear_warmup * rsqrt_decay``): a factor
  ``min(1, s / warmup) / sqrt(max(s, warmup))`` of ``lr``, so that ``lr`` is that code's constant (its
  peak, at ``warmup``, is ``lr / sqrt(warmup)``); ``total`` is not used.
- ``warmup_cosine`` (the LRA code's ``constant * linear_warmup * cosine_decay`` with
  ``steps_per_cycle = total``): ``min(1, s / warmup) · max(0, ½(1 + cos(π · (p mod 1))))`` with
  ``p = max(0, (s - warmup) / total)``.
  In both, ``s`` counts optimizer steps from 0, so the first step of a warm-up has learning rate 0,
  as in that code (Flax's optimizer step).
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


def linear_warmup(step: int, warmup: int) -> float:
    """The LRA code's ``linear_warmup`` factor: ``min(1, step / warmup)`` (1 without a warm-up)."""
    return min(1.0, step / warmup) if warmup else 1.0


def warmup_constant_from_zero(optimizer: Optimizer, lr: float, warmup: int, total: int) -> LRScheduler:
    """``min(1, step / warmup)`` of ``lr`` (module docstring); ``total`` is not used."""
    return LambdaLR(optimizer, lambda step: linear_warmup(step, warmup))


def warmup_rsqrt(optimizer: Optimizer, lr: float, warmup: int, total: int) -> LRScheduler:
    """``linear_warmup * rsqrt_decay`` of the LRA code (module docstring); ``total`` is not used."""
    return LambdaLR(optimizer, lambda step: linear_warmup(step, warmup) / math.sqrt(max(step, warmup, 1)))


def warmup_cosine(optimizer: Optimizer, lr: float, warmup: int, total: int) -> LRScheduler:
    """``linear_warmup * cosine_decay`` of the LRA code, one cycle of ``total`` steps (module docstring)."""

    def factor(step: int) -> float:
        progress = max(0.0, (step - warmup) / total)
        return linear_warmup(step, warmup) * max(0.0, 0.5 * (1.0 + math.cos(math.pi * (progress % 1.0))))

    return LambdaLR(optimizer, factor)


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
    "warmup_constant_from_zero": warmup_constant_from_zero,
    "warmup_rsqrt": warmup_rsqrt,
    "warmup_cosine": warmup_cosine,
    "one_cycle": one_cycle,
    "warmup_cosine_hf": warmup_cosine_hf,
}


def build_schedule(name: str, optimizer: Optimizer, lr: float, warmup: int, total: int) -> LRScheduler:
    """The schedule ``name`` over ``optimizer``; a ``ValueError`` listing the valid names if unknown."""
    if name not in SCHEDULES:
        raise ValueError(f"unknown schedule {name!r}; valid schedules: {', '.join(SCHEDULES)}")
    return SCHEDULES[name](optimizer, lr, warmup, total)
