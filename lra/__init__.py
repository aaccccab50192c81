"""The LRA harness: ``python -m lra task=T attention=A [overrides]`` (Hydra × Lightning).

Modules: ``model`` (the shared encoder), ``data`` (datamodule), ``module`` (LightningModule),
``callbacks`` (efficiency metrics), ``loggers``, ``checks`` and ``errors`` (config validation),
``resolvers`` (the ``lra.*`` interpolations of conf/), ``summary`` (summary.json and the final
table), ``resume`` (where a run trains and what it continues), ``memory`` (process RSS, no torch),
``published`` (the papers' numbers), ``provenance`` (machine, rerun command and tables of a result),
``report`` (the LRA table of finished runs), ``bench`` (efficiency and fidelity benchmarks),
``train`` (one job, start to end), ``__main__`` (the Hydra entry).
Importing ``lra`` registers the ``lra.*`` OmegaConf resolvers that ``conf/`` uses.
"""

from lra.resolvers import register_resolvers

register_resolvers()
