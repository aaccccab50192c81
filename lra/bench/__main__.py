"""``python -m lra.bench efficiency|fidelity|train-speed [options]``: see each sub-command's ``--help``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from lra.bench import compare, efficiency, fidelity, train_speed

# sub-command -> (help, configure(parser) -> run(args, argv))
COMMANDS = {
    "compare": ("our cores against reference implementations, timed interleaved", compare.configure),
    "efficiency": ("time and peak memory of forward+backward against sequence length", efficiency.configure),
    "fidelity": (
        "relative spectral-norm error of approximate attentions against exact ones",
        fidelity.configure,
    ),
    "train-speed": (
        "median full training step per task × attention, projected to a run, beside Skyformer Table 2",
        train_speed.configure,
    ),
}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="python -m lra.bench", description=__doc__)
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    runners = {}
    for name, (help_text, configure) in COMMANDS.items():
        runners[name] = configure(subparsers.add_parser(name, help=help_text, description=help_text))
    args = parser.parse_args(argv)
    try:
        runners[args.command](args, argv[1:])
    except ValueError as error:
        parser.error(str(error))
    return 0


if __name__ == "__main__":
    sys.exit(main())
