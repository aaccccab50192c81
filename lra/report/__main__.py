"""``python -m lra.report``: see ``lra.report.cli``. A missing input is one line, not a traceback."""

import sys

from lra.report.cli import main
from lra.report.compare import CompareError
from lra.report.wandb_workspace import WorkspaceError

try:
    sys.exit(main())
except (FileNotFoundError, WorkspaceError, CompareError) as error:
    sys.exit(f"error: {error}")
