"""Pathfinder and Path-X: ``prepare`` (``python -m data_prep pathfinder``) reads the LRA release
(``release_images``) or runs the built-in generator (``generator``, drawn with ``settings``,
``shapes``, ``layout``, ``attempts`` and ``snakes``) into a prepared set. The sub-package
``fidelity`` (``python -m data_prep pathfinder-stats``) measures how close the generator's images
are to the original's; nothing here imports it."""
