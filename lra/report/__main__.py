"""``python -m lra.report``: see ``lra.report.cli``. A missing input or an unwritable ``--out`` is one
line, not a traceback."""

import sys

from lra.config.errors import OutputFolderError
from lra.report.cli import main
from lra.report.compare import CompareError
from lra.report.wandb_workspace import WorkspaceError

try:
    sys.exit(main())
except (FileNotFoundError, WorkspaceError, OutputFolderError, CompareError) as error:
    sys.exit(f"error: {error}")
