"""What several entries of the zoo share: the causal key mask and the line that refuses an option
without a causal form (``causality``), the key-padding mask and float32 computation (``masking``),
rotary positions (``rotary``), Mamba's selective scan (``scan``), the short causal convolution
(``short_conv``), the two directions of a bidirectional mixer and their padding rule (``directions``),
the ``kernel=auto|fla|torch`` choice with the calls into fla's chunk kernels (``fla_kernels``), gated
linear attention in chunks (``gated_chunks``), what GLA and RetNet share around it (``gated_heads``),
fla's gated RMS norms (``gated_norm``), Based's Taylor feature map (``feature_maps``), the delta rule in
chunks (``delta_chunks``) and long convolutions by FFT (``long_conv``).

May import torch and the contract (``attention_zoo.registry``, ``attention_zoo.option_types``), never
``cores`` or ``mixers``: those build on these parts.
"""
