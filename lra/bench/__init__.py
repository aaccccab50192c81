"""Benchmarks of the attention zoo: ``python -m lra.bench efficiency|fidelity``.

``efficiency`` times forward+backward and measures peak memory of one attention layer and of the
whole encoder against sequence length; ``fidelity`` measures how far each approximate core's output
is from its exact counterpart's. Both write ``results/<benchmark>_<device>.{csv,md,png}`` with the
machine and the command that reruns them (``lra.provenance``).
"""
