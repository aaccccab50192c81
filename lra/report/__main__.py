"""``python -m lra.report``: see ``lra.report.cli``. A missing input is one line, not a traceback."""

import sys

from lra.report.cli import main
from lra.report.wandb_workspace import WorkspaceError

try:
    sys.exit(main())
except (FileNotFoundError, WorkspaceError) as error:
    sys.exit(f"error: {error}")
