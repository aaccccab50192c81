"""A zoo of attention cores behind one contract (pure PyTorch).

    core = attention_zoo.build_attention("nystrom", head_dim=32, num_heads=2, seq_len=1024)
    out = core(q, k, v, mask)   # (batch, heads, seq, head_dim), mask (batch, seq) bool or None
    mixer = attention_zoo.build_attention("s4d", dim=64, seq_len=1024)
    out = mixer(x, mask)        # (batch, seq, dim): in place of the whole multi-head attention

The package has three groups below its contract (``registry``, ``option_types``, ``state_sizes``,
``multihead``, ``plugins``, ``saved_memory`` at the top): ``parts`` (what several entries share),
``cores`` (the attention cores) and ``mixers`` (the recurrent and convolutional mixers). Importing the
package imports every module of every group, and each core's module registers it with
``@register_attention`` (a mixer's with ``@register_mixer``): a new core is one new file in
``cores/``, a new mixer one in ``mixers/``. Then
the cores of other installed packages are loaded through the ``lra.attentions`` entry point group
(``attention_zoo.plugins``).
``available()`` lists their names; ``supports_causal(name)`` says whether ``build_attention(name, ...,
causal=True)`` builds it, and ``state_size(name, seq_len=..., dim=...)`` gives the numbers per layer
it carries across the sequence. Pure PyTorch: nothing here imports Lightning, Hydra or ``lra``.
"""

import importlib
import pkgutil

from attention_zoo.multihead import MultiHeadSelfAttention
from attention_zoo.parts.rotary import RotaryEmbedding, check_rope, supports_rope
from attention_zoo.plugins import load_plugins
from attention_zoo.registry import (
    AttentionSpec,
    available,
    build_attention,
    is_mixer,
    register_attention,
    register_mixer,
    spec,
    supports_causal,
    tie_layers,
)
from attention_zoo.state_sizes import state_size

for _module in pkgutil.walk_packages(__path__, prefix=f"{__name__}."):
    importlib.import_module(_module.name)
load_plugins()

__all__ = [
    "AttentionSpec",
    "MultiHeadSelfAttention",
    "RotaryEmbedding",
    "available",
    "build_attention",
    "check_rope",
    "is_mixer",
    "register_attention",
    "register_mixer",
    "spec",
    "state_size",
    "supports_causal",
    "supports_rope",
    "tie_layers",
]
