"""The state-size figure of every registered core and mixer: the numbers per layer it carries across
a sequence, the x axis of Zoology's recall-against-state plot (Arora et al. 2023, Figure 2).

Each class defines its figure in its docstring and computes it in a static method
``state_size(*, seq_len, dim, num_heads, causal, **options) -> int``, given every option (its
defaults where not set); ``state_size`` below looks it up through the registry.
"""

from __future__ import annotations

from typing import Any

from attention_zoo.registry import checked_causal, spec


def state_size(
    name: str, *, seq_len: int, dim: int, num_heads: int = 2, causal: bool = False, **options: Any
) -> int | None:
    """The numbers per layer and sequence that ``name`` carries across a sequence of ``seq_len``
    tokens at width ``dim`` (a core's: the width of its queries, keys and values, ``num_heads``
    heads; a mixer's: the model width), with ``options`` (the rest at their defaults) and ``causal``.

    An entry whose class defines no ``state_size`` (a plugin's may not) has no figure: None, so a
    plot leaves it out rather than a run failing. Bad values raise as in ``build_attention``.
    """
    entry = spec(name)
    extra = checked_causal(entry, causal)
    values = entry.checked({"seq_len": seq_len, "dim": dim, "num_heads": num_heads, **options})
    figure = getattr(entry.cls, "state_size", None)
    if figure is None:
        return None
    return figure(**{**entry.options, **values, "causal": bool(extra)})


def every_key_and_value(*, seq_len: int, dim: int, **_: object) -> int:
    """2 · seq_len · dim: the keys and values of every position (Zoology's attention,
    ``zoology/mixers/attention.py``), the figure of each core that may read any key."""
    return 2 * seq_len * dim
