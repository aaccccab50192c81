"""Each option of a command declared once, as a field of its frozen settings: ``option`` holds the
field's ``add_argument`` spec, ``arguments`` adds the arguments the command works a field out from.
``add_options`` adds them to the parser in field order; ``settings_of`` builds the settings by field name."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import field, fields
from typing import Any, TypeVar

Settings = TypeVar("Settings")


def option(*flags: str, **spec: Any) -> Any:
    """A field set by ``add_argument(*flags, **spec)``, its flag ``--field-name`` unless ``flags`` say."""
    return field(metadata={"option": (flags, spec)})


def arguments(add: Callable[[argparse.ArgumentParser], None]) -> Any:
    """A field the command works out from the arguments ``add(parser)`` adds in this place."""
    return field(metadata={"arguments": add})


def add_options(parser: argparse.ArgumentParser, settings: type) -> None:
    for entry in fields(settings):
        if "option" in entry.metadata:
            flags, spec = entry.metadata["option"]
            parser.add_argument(*flags or [f"--{entry.name.replace('_', '-')}"], dest=entry.name, **spec)
        elif "arguments" in entry.metadata:
            entry.metadata["arguments"](parser)


def settings_of(settings: type[Settings], args: argparse.Namespace, **computed: Any) -> Settings:
    """``settings`` of each option's value (a list as a tuple), ``computed`` in place of any."""
    named = [entry.name for entry in fields(settings) if "option" in entry.metadata]
    values = {name: getattr(args, name) for name in named} | computed
    return settings(**{name: tuple(v) if isinstance(v, list) else v for name, v in values.items()})
