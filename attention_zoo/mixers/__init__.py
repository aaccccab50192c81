"""The recurrent and convolutional mixers, one module each: ``mixer(x, mask)`` on (batch, seq, dim), in
place of the whole multi-head attention: the state-space models (``s4d``, ``mamba``, ``mamba2``), the
gated linear attentions (``gla``, ``retnet``, ``based``), the delta rules (``deltanet``,
``gated_deltanet``) and Hyena's long convolutions (``hyena``).

May import torch, the contract (``attention_zoo.registry``, ``attention_zoo.state_sizes``) and
``attention_zoo.parts``; never ``cores``.
"""
