"""A typed schema for a TOML document: frozen dataclasses whose annotations are the schema, read by `parse`.

`float` is a finite number (never a bool), `Literal[...]` one of its values, `tuple[X, ...]` a list of X, a
dataclass a table with exactly its fields, `dict[str, float]` a table of names; `Annotated[float, Range(...)]`
narrows a number and `Annotated[dict[str, float], Names(...)]` says which names a table may hold and each one's
range. Whatever does not fit raises ConfigError: one line naming the key, what it holds and what it allows."""

from __future__ import annotations

import dataclasses
import math
import types
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

from hwtop.model.safe_text import printable
from hwtop.session.config import ConfigError

T = TypeVar("T")
SHOWN_CHARS = 40  # of a wrong value, in the message


@dataclass(frozen=True, slots=True)
class Range:
    low: float
    high: float = math.inf
    low_open: bool = False  # `low` itself is not allowed (an interval of 0 seconds)
    what: str = "a number"

    def allows(self, value: float) -> bool:
        return math.isfinite(value) and (value > self.low if self.low_open else value >= self.low) \
            and value <= self.high

    def __str__(self) -> str:
        if self.high == math.inf:
            return f"{self.what} more than {self.low:g}" if self.low_open else f"{self.what} of {self.low:g} or more"
        if self.low_open:
            return f"{self.what} more than {self.low:g} and at most {self.high:g}"
        return f"{self.what} from {self.low:g} to {self.high:g}"


@dataclass(frozen=True, slots=True)
class Names:
    """The names a `dict[str, float]` table may hold (`kind`: what a name is, for the message), each its range."""

    kind: str
    ranges: Mapping[str, Range]


def shown(value: object) -> str:
    """A value as the message quotes it: TOML's true/false, short, control characters visible."""
    text = str(value).lower() if isinstance(value, bool) else repr(value)
    return printable(text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…")


def parse(schema: type[T], table: object, key: str = "") -> T:
    """`table` (a parsed TOML table) as an instance of the dataclass `schema`; missing keys take their defaults."""
    hints = _hints(schema)
    fields = list(hints)
    if not isinstance(table, dict):
        raise ConfigError(f"{key} = {shown(table)}: expected {describe(schema)}")
    values = {}
    for name, value in table.items():
        where = f"{key}.{name}" if key else str(name)
        if name not in fields:
            raise ConfigError(f"{printable(where)}: unknown key; known: {', '.join(fields)}")
        values[name] = _value(hints[name], value, where)
    return schema(**values)


@cache
def _hints(schema: type) -> dict[str, Any]:
    """The fields of a schema dataclass and their resolved annotations, in declaration order."""
    resolved = get_type_hints(schema, include_extras=True)
    return {f.name: resolved[f.name] for f in dataclasses.fields(schema)}


def describe(hint: Any) -> str:
    """What a value of this annotation looks like, in words."""
    origin, args = get_origin(hint), get_args(hint)
    if origin is Annotated:
        meta = args[1]
        if isinstance(meta, Range):
            return str(meta)
        if isinstance(meta, Names):
            return f"a table of {meta.kind} names"
        return describe(args[0])
    if origin in (Union, types.UnionType):
        return " or ".join(describe(arg) for arg in args if arg is not type(None))
    if dataclasses.is_dataclass(hint):
        return f"a table with keys {', '.join(f.name for f in dataclasses.fields(hint))}"
    if origin is Literal:
        return "one of " + ", ".join(map(str, args))
    if origin is tuple:
        inner = get_args(args[0]) if get_origin(args[0]) is Literal else ()
        return "a list of any of: " + ", ".join(map(str, inner)) if inner else f"a list of {describe(args[0])}"
    if hint is float:
        return "a number"
    if hint is str:
        return "a string"
    return getattr(hint, "__name__", str(hint))


def _value(hint: Any, value: object, key: str) -> object:
    origin, args = get_origin(hint), get_args(hint)
    wrong = ConfigError(f"{printable(key)} = {shown(value)}: expected {describe(hint)}")
    if origin is Annotated:
        base, meta = args[0], args[1]
        if isinstance(meta, Names):
            return _names(meta, value, key, wrong)
        try:
            result = _value(base, value, key)
        except ConfigError:
            raise wrong from None  # the message says the range, not only the type
        if isinstance(meta, Range) and not meta.allows(float(result)):  # type: ignore[arg-type]
            raise wrong
        return result
    if origin in (Union, types.UnionType):
        (inner,) = [arg for arg in args if arg is not type(None)]  # TOML has no null: X | None is X when given
        return _value(inner, value, key)
    if dataclasses.is_dataclass(hint):
        return parse(hint, value, key)  # type: ignore[arg-type]
    if origin is Literal:
        if isinstance(value, str) and value in args:
            return value
        raise wrong
    if origin is tuple:
        if not isinstance(value, list):
            raise wrong
        try:
            return tuple(_value(args[0], item, key) for item in value)
        except ConfigError:
            raise wrong from None
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise wrong
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise wrong
        return value
    raise TypeError(f"the schema uses {hint!r}, which parse does not know")


def _names(names: Names, value: object, key: str, wrong: ConfigError) -> dict[str, float]:
    if not isinstance(value, dict):
        raise wrong
    out = {}
    for name, number in value.items():
        where = f"{key}.{name}"
        allowed = names.ranges.get(name)
        if allowed is None:
            raise ConfigError(f"{printable(where)}: unknown {names.kind}; known: {', '.join(names.ranges)}")
        out[name] = _value(Annotated[float, allowed], number, where)
    return out  # type: ignore[return-value]
