"""Pathfinder and Path-X: ``prepare`` (``python -m data_prep pathfinder``) reads the LRA release
(``release``) or runs the built-in generator (``generator``, drawn with ``settings``, ``shapes``,
``layout``, ``attempts`` and ``snakes``) into a prepared set; ``stats`` (``python -m data_prep
pathfinder-stats``) measures the generator's images against the original's and, with
``--reference``, against reference images (``reference``) by a two-sample test (``two_sample``,
with the regression of ``logistic``)."""
