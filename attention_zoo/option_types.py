"""The option types every value of a core, a mixer or the harness's config is checked against.

``PositiveInt``, ``OddPositiveInt``, ``Probability``, ... are ``Annotated`` types whose metadata
(``Bounds``, ``Odd``, ``Even``) ``OptionType`` reads: ``OptionType.of(annotation).check(value)``
returns the value (a float for a float type) or raises a ``ValueError`` saying what is valid. The
registry types each core's options with them (``attention_zoo.registry``), and the harness checks its
own config keys with the same validator (``lra.job.checks``).
"""

from __future__ import annotations

import math
import types
import typing
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union

NOUNS = {int: "integer", float: "number", bool: "boolean (true or false)", str: "string"}


@dataclass(frozen=True)
class Bounds:
    """``low <= value <= high`` (``<`` where the side is open); None leaves a side unbounded."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False

    def admits(self, value: float) -> bool:
        low_ok = self.low is None or (value > self.low if self.low_open else value >= self.low)
        high_ok = self.high is None or (value < self.high if self.high_open else value <= self.high)
        return low_ok and high_ok

    def describe(self) -> str:
        low, high = number_text(self.low), number_text(self.high)
        if self.low is not None and self.high is not None:
            opening, closing = "(" if self.low_open else "[", ")" if self.high_open else "]"
            return f"in {opening}{low}, {high}{closing}"
        if self.low is not None:
            return f"{'>' if self.low_open else '>='} {low}"
        return f"{'<' if self.high_open else '<='} {high}" if self.high is not None else ""


def number_text(number: float | None) -> str:
    """A bound as written: ``4294967296`` for a whole number, else the shortest form (``0.5``)."""
    if number is None:
        return ""
    return str(int(number)) if float(number).is_integer() else f"{number:g}"


@dataclass(frozen=True)
class Odd:
    """An odd integer."""


@dataclass(frozen=True)
class Even:
    """An even integer."""


# The option types a core's constructor annotates its options with, e.g.
#     num_landmarks: PositiveInt = 64             # an integer >= 1 (bool rejected)
#     conv_kernel_size: OddPositiveInt | None = 35
#     d_state: EvenPositiveInt = 64               # an even integer >= 2
#     ridge: PositiveFloat = 0.1                  # a number > 0 (an int is accepted and made float)
#     attention_dropout: Probability = 0.0        # a number in [0, 1)
#     layout: Literal["a", "b"] = "a"             # one of the listed strings
# ``Annotated[int, Bounds(...)]`` (and ``Odd()``, ``Even()``) declares other ranges.
PositiveInt = Annotated[int, Bounds(low=1)]
NonNegativeInt = Annotated[int, Bounds(low=0)]
OddPositiveInt = Annotated[int, Bounds(low=1), Odd()]
EvenPositiveInt = Annotated[int, Bounds(low=2), Even()]
PositiveFloat = Annotated[float, Bounds(low=0, low_open=True)]
NonNegativeFloat = Annotated[float, Bounds(low=0)]
Probability = Annotated[float, Bounds(low=0, high=1, high_open=True)]


@dataclass(frozen=True)
class OptionType:
    """What one option (or config key) accepts, read from its annotation; ``check`` returns the value
    to use. ``Literal`` choices may include None (``Literal["norm", "value", None]``)."""

    base: type | tuple[Any, ...]  # int, float, bool, str, or the choices of a Literal
    bounds: tuple[Bounds, ...] = ()
    odd: bool = False
    nullable: bool = False
    even: bool = False

    @classmethod
    def of(cls, annotation: Any) -> OptionType:
        nullable = False
        if typing.get_origin(annotation) in (Union, types.UnionType):
            members = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
            if len(members) != 1:
                raise TypeError(f"an option may be one type or that type | None, not {annotation}")
            annotation, nullable = members[0], True
        extras: tuple[Any, ...] = ()
        if typing.get_origin(annotation) is Annotated:
            annotation, *extras = typing.get_args(annotation)
        if typing.get_origin(annotation) is Literal:
            base: type | tuple[Any, ...] = tuple(typing.get_args(annotation))
        elif annotation in (int, float, bool, str):
            base = annotation
        else:
            raise TypeError(f"unsupported option annotation {annotation!r} (int, float, bool, str, Literal)")
        bounds = tuple(extra for extra in extras if isinstance(extra, Bounds))
        odd = any(isinstance(extra, Odd) for extra in extras)
        even = any(isinstance(extra, Even) for extra in extras)
        return cls(base, bounds, odd, nullable, even)

    def describe(self, *, as_override: bool = False) -> str:
        """What is valid, in words: ``an odd integer >= 1 or null``. Choices are quoted as Python
        values (``one of 'a', 'b'``), or ``as_override`` as a command-line override spells them
        (``one of a, b, null``)."""
        if isinstance(self.base, tuple):
            spell = (lambda c: "null" if c is None else str(c)) if as_override else repr
            text = "one of " + ", ".join(spell(choice) for choice in self.base)
        else:
            noun = NOUNS[self.base]
            parity = "an odd " if self.odd else "an even " if self.even else ""
            text = (parity or ("an " if noun[0] in "aeiou" else "a ")) + noun
            text = " ".join([text, *(bound.describe() for bound in self.bounds)])
        return text + (" or null" if self.nullable else "")

    def accepts(self, value: Any) -> bool:
        """Whether ``value`` is valid (a float option accepts an int; NaN and inf are never valid)."""
        if value is None and self.nullable:
            return True
        if isinstance(self.base, tuple):
            return value in self.base
        if self.base is float:
            valid = isinstance(value, (int, float)) and math.isfinite(value)
        else:
            valid = isinstance(value, self.base)
        if not valid or (isinstance(value, bool) and self.base is not bool):
            return False
        parity_ok = not (self.odd and value % 2 == 0) and not (self.even and value % 2 == 1)
        return all(bound.admits(value) for bound in self.bounds) and parity_ok

    def check(self, value: Any) -> Any:
        """``value`` as the option's type, or ``ValueError`` (the caller adds the names)."""
        if not self.accepts(value):
            raise ValueError(f"must be {self.describe()}")
        return float(value) if self.base is float and value is not None else value
