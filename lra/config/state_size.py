"""The state size a run records (``model/state_size``): the numbers per layer and sequence that its
attention carries across the sequence (``attention_zoo.state_size``), at the length and width the
encoder builds it for."""

from __future__ import annotations

from typing import Any

import attention_zoo

NODE_KEYS = ("_target_", "_partial_", "name")  # an attention node's keys that are not the entry's options


def encoder_state_size(attention: dict[str, Any], model: dict[str, Any], seq_len: int) -> int | None:
    """``attention_zoo.state_size`` of the attention node ``attention`` in the encoder of the model
    options ``model`` over ``seq_len`` tokens: a core at the query/key/value width (``qkv_dim``, else
    ``dim``) and ``num_heads``, a mixer at the model width; the length counts a CLS token; None for an
    entry without a figure. A ``ValueError`` line where the options (or ``causal``) do not fit."""
    name = attention["name"]
    options = {key: value for key, value in attention.items() if key not in NODE_KEYS}
    mixer = attention_zoo.spec(name).mixer
    return attention_zoo.state_size(
        name,
        seq_len=seq_len + int(model.get("cls_token", False)),
        dim=model["dim"] if mixer else model.get("qkv_dim") or model["dim"],
        num_heads=model["num_heads"],
        causal=bool(model.get("causal", False)),
        **options,
    )
