"""How the encoder tells positions apart (``model.position``, ``model.positions``, ``model.learn_pos_emb``).

``position: absolute`` adds an absolute embedding to the tokens: learned (``learn_pos_emb``) or LRA's fixed
sinusoids, or none at all (``positions: false``, the S4 models'). ``position: rope`` rotates q and k of
every head by position before each attention core instead (``attention_zoo.parts.rotary``: ``rope_fraction``
of each head's dimensions), and adds no absolute embedding, whatever ``positions`` and ``learn_pos_emb`` say.
"""

from __future__ import annotations

import math

import torch

# model.position -> what it does; the encoder and lra.job.checks read the names from here
POSITION_KINDS: dict[str, str] = {
    "absolute": "an absolute embedding as positions and learn_pos_emb say (learned, sinusoids or none)",
    "rope": "rotary positions on q and k before every attention core, no absolute embedding",
}


def sinusoids(positions: int, dim: int) -> torch.Tensor:
    """The fixed position table of the LRA code: (positions, dim), sin on even and cos on odd features,
    frequencies 10000^(-2i/dim)."""
    position = torch.arange(positions, dtype=torch.float64)[:, None]  # (positions, 1)
    frequency = torch.exp(torch.arange(0, dim, 2, dtype=torch.float64) * -(math.log(10000.0) / dim))
    table = torch.zeros(positions, dim, dtype=torch.float64)  # (positions, dim)
    table[:, 0::2] = torch.sin(position * frequency)
    table[:, 1::2] = torch.cos(position * frequency)[:, : dim // 2]
    return table.float()


def absolute_table(position: str, positions: bool, learn_pos_emb: bool) -> str | None:
    """Which absolute embedding the encoder adds: ``"learned"``, ``"sinusoids"`` or None; a one-line
    ``ValueError`` naming the valid kinds when ``position`` is not one of them."""
    if position not in POSITION_KINDS:
        raise ValueError(f"model.position={position!r} is not one of {', '.join(POSITION_KINDS)}")
    if position != "absolute" or not positions:
        return None
    return "learned" if learn_pos_emb else "sinusoids"
