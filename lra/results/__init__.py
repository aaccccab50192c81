"""What runs leave and what they are compared with: ``summary.json`` (``summary_json``) and its tables
(``summary_tables``), the papers' published accuracies (``published_numbers``) and costs
(``published_costs``), and the plots with their marker labels (``plotting``, ``marker_labels``).

May import ``lra.config``, ``lra.one_line``, ``lra.provenance`` and ``data_prep``; it builds nothing.
"""
