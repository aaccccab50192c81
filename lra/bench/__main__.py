"""``python -m lra.bench COMMAND [options]``: see each command's ``--help``.

``COMMANDS`` maps a command's name to its module; a command module has ``HELP`` (one line) and
``configure(parser)``, which adds its arguments and returns ``run(args, argv)``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from types import ModuleType

from lra.bench import compare, efficiency, fidelity, train_speed

COMMANDS: dict[str, ModuleType] = {
    "compare": compare,
    "efficiency": efficiency,
    "fidelity": fidelity,
    "train-speed": train_speed,
}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="python -m lra.bench", description=__doc__)
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    runners = {
        name: module.configure(subparsers.add_parser(name, help=module.HELP, description=module.HELP))
        for name, module in COMMANDS.items()
    }
    args = parser.parse_args(argv)
    try:
        runners[args.command](args, argv[1:])
    except ValueError as error:
        parser.error(str(error))
    return 0


if __name__ == "__main__":
    sys.exit(main())
