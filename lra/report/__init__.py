"""The read side of the harness: finished runs become the papers' tables and figures.

``python -m lra.report`` (``cli``) writes the report: ``runs`` reads the summary.json files, ``curves``
the metrics CSVs, ``tables`` and ``figures`` draw, ``papers`` says which tables and figures each paper
has, ``document`` assembles the markdown and ``wandb_log`` logs the same to W&B. ``progress`` counts a
sweep's jobs, ``published`` holds the papers' numbers and ``provenance`` the machine, command and
markdown lines shared with ``lra.bench``. Nothing is imported here, so ``lra.bench`` can import
``lra.provenance`` without the rest.
"""
