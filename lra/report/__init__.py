"""The read side of the harness: finished runs become the papers' tables and figures.

``python -m lra.report`` (``cli``) writes the report: ``runs`` reads the summary.json files, ``curves``
the metrics CSVs, ``tables`` and ``figures`` draw, ``spt`` sets runs from scratch beside self-pretrained
ones, ``paper_layouts`` says which tables and figures each paper has, ``document`` assembles the
markdown and ``wandb_log`` logs the same to W&B. ``progress`` counts a sweep's jobs;
``lra.published_numbers`` holds the papers' numbers and ``lra.provenance`` the machine, command and
markdown lines shared with ``lra.bench``. Nothing is imported here, so that importing one module does
not import the rest.
"""
