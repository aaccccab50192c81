"""The bidirectional form of a causal mixer: one pass over the sequence and one over it flipped,
the second flipped back, the two averaged; and the rule that keeps padding invisible in both.

The encoder of the LRA tasks is not causal, and the recurrent mixers' sources (Mamba, fla's layers)
define one direction only. Their bidirectional form here is the harness's choice, after Vision
Mamba's bidirectional block (Zhu et al. 2024, ``if_devide_out``): a forward pass, a pass over the
reversed sequence, and their mean, which keeps the output at the scale of one direction.

Padding: every tensor a direction is given is zeroed at the padded positions, and each direction
keeps its state unchanged through them (a zero key or input writes nothing; a zero log decay, or
a zero step, decays nothing). A padded position then reaches no real position in either direction,
and the reversed sequence, which starts with its padding, passes the zero state on unchanged: the
backward pass equals the direction run over each sequence reversed within its own length.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

# One direction: tensors (B, L, ...) zero at padding, mask (B, L) bool or None -> (B, L, ...), causal.
OneWay = Callable[..., torch.Tensor]


def zeroed_at_padding(tensors: Sequence[torch.Tensor], mask: torch.Tensor | None) -> list[torch.Tensor]:
    """Each (B, L, ...) tensor with its padded positions set to zero (mask (B, L) bool, True = real)."""
    if mask is None:
        return list(tensors)
    return [t * mask.view(*mask.shape, *(1,) * (t.dim() - 2)) for t in tensors]


def both_ways(
    directions: Sequence[OneWay], tensors: Sequence[torch.Tensor], mask: torch.Tensor | None
) -> torch.Tensor:
    """``directions[0](*tensors, mask)`` with the tensors zeroed at padding; with two directions, the
    mean of that and ``directions[1]`` run over the tensors and mask flipped along L, its output flipped
    back: tensors (B, L, ...) -> (B, L, ...). A mixer whose directions share weights passes the same
    callable twice."""
    if len(directions) not in (1, 2):
        raise ValueError(f"a mixer runs one direction or two, got {len(directions)}")
    tensors = zeroed_at_padding(tensors, mask)
    y = directions[0](*tensors, mask)  # (B, L, ...)
    if len(directions) == 2:
        flipped = None if mask is None else mask.flip(1)
        y = (y + directions[1](*(t.flip(1) for t in tensors), flipped).flip(1)) / 2
    return y
