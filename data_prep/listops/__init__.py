"""ListOps: ``prepare`` (``python -m data_prep listops``) reads LRA's or the original (Nangia & Bowman
2018) TSV files, or runs the built-in tree generator (``generator``), into a prepared set."""
