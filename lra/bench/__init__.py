"""Benchmarks of the attention zoo and the harness: ``python -m lra.bench COMMAND`` (``__main__``; the
structure: docs/design.md). May import ``attention_zoo``, ``lra.config``, ``lra.model``, ``lra.job``,
``lra.provenance``, ``lra.one_line`` and ``lra.results``; never ``lra.report`` or ``lra.__main__``.
Nothing is imported here."""
