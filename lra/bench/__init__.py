"""Benchmarks of the attention zoo and the harness: ``python -m lra.bench COMMAND`` (``__main__``).

A command module holds its options, page and plot; the module below it measures one configuration; all
share ``measuring`` (a timed step, here or in a fresh interpreter) and ``output`` (the files and their
provenance). May import ``attention_zoo``, ``lra.config``, ``lra.model``, ``lra.job``, ``lra.provenance``,
``lra.one_line`` and ``lra.results``; never ``lra.report`` or ``lra.__main__``. Nothing is imported here.
"""
