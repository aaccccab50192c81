"""The attention cores, one module each: ``core(q, k, v, mask)`` on (batch, heads, seq, head_dim), the
exact attentions (``standard``, ``kernelized``) and their approximate and sparse forms, with the
helpers only cores use (``landmarks``, ``pinv``, ``band``).

May import torch, the contract (``attention_zoo.registry``, ``attention_zoo.state_sizes``) and
``attention_zoo.parts``; never ``mixers``.
"""
