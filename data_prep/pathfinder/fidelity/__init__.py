"""How close the built-in Pathfinder generator's images are to the original's: ``stats``
(``python -m data_prep pathfinder-stats``), a two-sample test against reference images
(``two_sample``, ``reference``) and the regression both use (``logistic``). It imports the generator
and the release reader beside it; they never import it."""
