"""What several entries of the zoo share: the causal key mask and the line that refuses an option
without a causal form (``causality``), the key-padding mask and float32 computation (``masking``),
rotary positions (``rotary``) and Mamba's selective scan (``scan``).

May import torch and the contract (``attention_zoo.registry``, ``attention_zoo.option_types``), never
``cores`` or ``mixers``: those build on these parts.
"""
