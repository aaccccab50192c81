"""Benchmarks of the attention zoo and the harness: ``python -m lra.bench efficiency|fidelity|train-speed``.

Each benchmark is a command-line module (``efficiency``, ``fidelity``, ``train_speed``) beside modules
of one job each: what it measures (``*_workloads``, ``*_measure``, ``fidelity_checkpoint``,
``train_step``) and the files it writes (``*_output``). Shared by them: ``timing`` (median step time
and peak memory on CPU or CUDA), ``isolation`` (one configuration per fresh subprocess, with a
timeout and a memory limit), ``writers`` (CSV and figures) and ``baselines`` (the naive softmax
core). Every benchmark writes ``results/<benchmark>_<device>.*`` with the machine and the command that
reruns it (``lra.report.provenance``).
"""
