"""What several entries of the zoo share: the causal key mask and the line that refuses an option
without a causal form (``causality``), the key-padding mask and float32 computation (``masking``),
rotary positions (``rotary``), Mamba's selective scan (``scan``), the short causal convolution
(``short_conv``), the two directions of a bidirectional mixer and their padding rule (``directions``),
and the ``kernel=auto|fla|torch`` choice with the calls into fla's chunk kernels (``fla_kernels``).

May import torch and the contract (``attention_zoo.registry``, ``attention_zoo.option_types``), never
``cores`` or ``mixers``: those build on these parts.
"""
