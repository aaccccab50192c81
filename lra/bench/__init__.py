"""Benchmarks of the attention zoo and the harness: ``python -m lra.bench COMMAND``.

Each command is a module (``efficiency``, ``fidelity``, ``train_speed``, ``compare``; registered in
``__main__``) holding its arguments, its frozen settings, its page and plot, above the module that
measures one configuration (``*_measure``; ``authors_cores`` for ``compare``). All share ``measuring``
(a timed step's time and peak memory, in this process or a fresh interpreter) and ``output`` (the CSV,
the page with its provenance, the figure). May import ``attention_zoo``, the harness (``lra.model``,
``lra.train``, ``lra.checks``, ``lra.memory``, ``lra.paths``, ``lra.summary_json``) and the modules
below both it and ``lra.report`` (``lra.provenance``, ``lra.published_numbers``,
``lra.published_costs``, ``lra.plotting``); never ``lra.report`` or ``lra.__main__``. Nothing is
imported here.
"""
