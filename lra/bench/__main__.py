"""``python -m lra.bench COMMAND [options]``: see each command's ``--help``.

``COMMANDS`` maps a command's name to its module. A command module has ``HELP`` (one line),
``configure(parser)`` (adds its arguments), ``settings_from(args)`` (its frozen settings, built once
from the parsed arguments; a ``ValueError`` is a usage error) and ``run(settings, argv)``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from lra.bench import authors_ssm, compare, efficiency, fidelity, train_speed

COMMANDS = {
    "compare": compare, "authors-ssm": authors_ssm, "efficiency": efficiency, "fidelity": fidelity,
    "train-speed": train_speed,
}  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="python -m lra.bench", description=__doc__)
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module in COMMANDS.items():
        module.configure(subparsers.add_parser(name, help=module.HELP, description=module.HELP))
    args = parser.parse_args(argv)
    command = COMMANDS[args.command]
    try:
        command.run(command.settings_from(args), argv[1:])
    except ValueError as error:
        parser.error(str(error))
    return 0


if __name__ == "__main__":
    sys.exit(main())
