"""``python -m data_prep``: one sub-command per task, each registered by the task's module, and the
rebuild command that every prepared set records in its meta.json.

A task module declares its sub-command with ``@command("name", help=...)`` on a function that
adds its arguments to an ``argparse`` parser and returns the function that runs it::

    @command("listops", help="ListOps: the built-in generator or the LRA / 2018 TSV files")
    def listops_command(parser: argparse.ArgumentParser) -> Callable[[argparse.Namespace], None]:
        parser.add_argument("--seed", type=int, default=0)
        return run_listops
"""

from __future__ import annotations

import argparse
import importlib
import shlex
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from data_prep.storage import default_root

Runner = Callable[[argparse.Namespace], None]
Configure = Callable[[argparse.ArgumentParser], Runner]

# Modules whose import registers sub-commands, in the order --help lists them.
COMMAND_MODULES: list[str] = [
    "data_prep.listops.prepare",
    "data_prep.text",
    "data_prep.retrieval",
    "data_prep.image",
    "data_prep.pathfinder.prepare",
    "data_prep.pathfinder.fidelity.stats",
    "data_prep.lra_archive",
    "data_prep.small_sets",
    "data_prep.verify",
]


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    configure: Configure


_COMMANDS: dict[str, Command] = {}


def command(name: str, help: str) -> Callable[[Configure], Configure]:
    """Register a sub-command ``name`` (see the module docstring)."""

    def decorate(configure: Configure) -> Configure:
        if name in _COMMANDS:
            raise ValueError(f"data_prep command {name!r} is registered twice")
        _COMMANDS[name] = Command(name, help, configure)
        return configure

    return decorate


def build_parser() -> argparse.ArgumentParser:
    for module in COMMAND_MODULES:
        importlib.import_module(module)
    parser = argparse.ArgumentParser(
        prog="python -m data_prep",
        description="Prepare the LRA tasks into memory-mapped arrays under the data root.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for entry in _COMMANDS.values():
        sub = subparsers.add_parser(entry.name, help=entry.help, description=entry.help)
        sub.add_argument(
            "--root",
            type=Path,
            default=default_root(),
            help="data root (default: $LRA_DATA or ./data)",
        )
        sub.set_defaults(run=entry.configure(sub))
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run ``python -m data_prep`` with ``argv``; returns the exit code (errors print one clear line)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        args.run(args)
    except (OSError, ValueError) as error:  # missing/corrupt data, bad source, network failure
        print(f"data_prep {args.command}: error: {error}", file=sys.stderr)
        return 1
    return 0


def rebuild_command(command: str, args: argparse.Namespace, options: Sequence[str]) -> str:
    """``python -m data_prep COMMAND --root ROOT --option value ...`` for the ``options`` (argparse dests).

    An option whose value is None or False is left out, True gives the bare flag, and a list
    repeats the flag once per item.
    """
    parts = ["python", "-m", "data_prep", command, "--root", str(args.root)]
    for dest in options:
        value = getattr(args, dest)
        flag = "--" + dest.replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            parts.append(flag)
        elif isinstance(value, list):
            for item in value:
                parts += [flag, str(item)]
        else:
            parts += [flag, str(value)]
    return shlex.join(parts)
