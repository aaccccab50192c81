"""Benchmarks of the attention zoo and the harness: ``python -m lra.bench COMMAND``.

Each command is a module (``efficiency``, ``fidelity``, ``train_speed``, ``compare``; registered in
``__main__``) holding its arguments, its frozen settings, its page and plot, above the module that
measures one configuration (``*_measure``; ``authors_cores`` for ``compare``). All share ``measuring``
(a timed step's time and peak memory, in this process or a fresh interpreter; a failure read as a row
without figures) and ``output`` (the CSV, the page with its provenance, the figure). May import
``attention_zoo``, the harness (``lra.config``, ``lra.model``, ``lra.job``) and the modules below both
it and ``lra.report`` (``lra.provenance``, ``lra.one_line``, ``lra.results``); never ``lra.report``
or ``lra.__main__``. Nothing is imported here.
"""
