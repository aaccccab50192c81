"""Benchmarks of the attention zoo and the harness: ``python -m lra.bench efficiency|fidelity|train-speed``.

Each benchmark is a command module (``efficiency``, ``fidelity``, ``train_speed``, registered by name in
``__main__``) beside the modules that are its own (workloads, measuring, tables). Shared by them:
``isolation`` (the one runner: each configuration in this process or in a fresh subprocess, with a
timeout and a memory limit), ``output`` (the one writer: CSV, the markdown page with its provenance,
figures), ``timing`` (median step time and peak memory on CPU or CUDA) and ``baselines`` (the naive
softmax core). Every benchmark writes ``results/<benchmark>_<device>.*`` with the machine and the
command that reruns it (``lra.provenance``).
"""
