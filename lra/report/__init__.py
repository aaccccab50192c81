"""The read side of the harness: finished runs become the papers' tables and figures.

``python -m lra.report`` (``cli``) writes the report; ``runs`` reads summary.json files, ``tables``,
``figures`` and ``document`` write it, ``progress`` counts a sweep's jobs, ``published`` holds the
papers' numbers and ``provenance`` the machine, command and markdown lines shared with ``lra.bench``.
Nothing is imported here, so ``lra.bench`` can import ``lra.report.provenance`` without the rest.
"""
