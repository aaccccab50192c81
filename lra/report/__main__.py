"""``python -m lra.report``: see ``lra.report.cli``."""

import sys

from lra.report.cli import main

sys.exit(main())
