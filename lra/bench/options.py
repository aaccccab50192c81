"""A command's options, each declared once: as a field of the command's frozen settings that carries its
``add_argument`` spec (``option``), or the arguments the command reads a field from (``arguments``).
``add_options`` adds them to the command's parser in field order; ``settings_of`` builds the settings
from the parsed arguments by field name, with the fields the command works out itself passed in."""

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
    """``settings`` with each option's value (a list as a tuple), ``computed`` in place of any."""
    given = {
        entry.name: getattr(args, entry.name) for entry in fields(settings) if "option" in entry.metadata
    }
    values = given | computed
    return settings(**{name: tuple(v) if isinstance(v, list) else v for name, v in values.items()})
