"""What a config may be and what it becomes: the typed records each part of a run is built from
(``records``), the one-line errors (``errors``, ``hydra_errors``), the names of jobs and their options
(``naming``), the optional extras (``extras``), the config groups ``--help`` lists (``help_groups``)
and where things live (``paths``); and the signals that stop a run (``stop_signals``), which the
loaders, the jobs and the sweeps take each their way.

It imports nothing of ``lra`` outside itself (``attention_zoo`` aside): every other part may import it.
"""
