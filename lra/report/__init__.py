"""The read side of the harness: finished runs become the papers' tables and figures.

``python -m lra.report`` (``cli``) writes the report: ``runs`` reads the summary.json files, ``curves``
the metrics CSVs, ``selection`` chooses the runs, ``tables`` draws the tables, ``panels`` groups the
runs of a figure into panels, ``figures`` and ``figure3`` draw, ``spt`` sets runs from scratch beside
self-pretrained ones, ``paper_layouts`` says which tables and figures each paper has, ``studies`` adds the
hyperparameter searches, ``document`` assembles the markdown and ``wandb_log`` logs the same to W&B;
``progress`` counts a sweep's jobs by state. It imports the job's record formats
(``lra.results.summary_json``, ``lra.job.run_identity``, ``lra.config.naming``, ``lra.search.study``) and the
modules it shares with ``lra.bench`` (``lra.provenance``, ``lra.results.published_numbers``,
``lra.results.published_costs``, ``lra.results.plotting``), never ``lra.bench``. Nothing is imported here, so
a submodule loads only what it needs.
"""
