"""``python -m lra.bench COMMAND [options]``: see each command's ``--help``.

``COMMANDS`` maps a command's name to its module. A command module has ``HELP`` (one line), ``Settings``
(frozen, each option a field: ``lra.bench.options``), ``settings_from(args)`` (its settings, built once
from the parsed arguments; a ``ValueError`` is a usage error) and ``run(settings, argv)``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from lra.bench import authors_ssm, compare, efficiency, fidelity, train_speed
from lra.bench.options import add_options
from lra.config.errors import OutputFolderError

COMMANDS = {
    "compare": compare,
    "authors-ssm": authors_ssm,
    "efficiency": efficiency,
    "fidelity": fidelity,
    "train-speed": train_speed,
}
# What --help prints: one example per command, for users.
DESCRIPTION = "Benchmarks of the attention cores and mixers: time, memory and accuracy of the approximation."
EXAMPLES = {
    "efficiency": "python -m lra.bench efficiency --attentions standard nystrom --lengths 512 1024",
    "fidelity": "python -m lra.bench fidelity --lengths 256 512 --budgets 32 64",
    "train-speed": "python -m lra.bench train-speed --tasks listops --attentions standard nystrom",
    "compare": "python -m lra.bench compare --against authors --authors-code ~/Skyformer",
    "authors-ssm": "python -m lra.bench authors-ssm --s4-code ~/s4 --mamba-code ~/mamba-minimal",
}
GUIDE = "docs/benchmarks.md says what each command measures and writes."


def examples_text(names: Sequence[str]) -> str:
    """The closing lines of a --help: an example of each named command, then where the manual is."""
    lines = "\n".join(f"  {EXAMPLES[name]}" for name in names)
    return f"example{'s' if len(names) > 1 else ''}:\n{lines}\n\n{GUIDE}"


def build_parser() -> argparse.ArgumentParser:
    layout = {"formatter_class": argparse.RawDescriptionHelpFormatter}
    parser = argparse.ArgumentParser(
        prog="python -m lra.bench", description=DESCRIPTION, epilog=examples_text(list(COMMANDS)), **layout
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module in COMMANDS.items():
        help_text = {"help": module.HELP, "description": module.HELP, "epilog": examples_text([name])}
        add_options(subparsers.add_parser(name, **help_text, **layout), module.Settings)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    command = COMMANDS[args.command]
    try:
        command.run(command.settings_from(args), argv)
    except OutputFolderError as error:  # one line: the usage is not the problem
        sys.exit(f"{parser.prog}: {error}")
    except ValueError as error:
        parser.error(str(error))
    return 0


if __name__ == "__main__":
    sys.exit(main())
