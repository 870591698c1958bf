"""A typed schema for a TOML document, decoded by msgspec: frozen Structs (forbidding unknown keys) whose annotations
are the schema. `float` is a finite number (never a bool), `Literal[...]` one of its values, `tuple[X, ...]` a
list of X, a Struct a table with exactly its fields; `Annotated[float, allowed.meta(), allowed]` (a Range) narrows a
number, and `Annotated[dict[str, float], Names(...)]` says which names a table may hold and each one's range.

What does not fit raises ConfigError: one line naming the key, what it holds and what it allows. msgspec says where
(`$.ui.interval`) and what kind of thing it wanted; the line is made from the schema at that place, so it reads
as the schema's words (`ui.interval = -1: expected a number of seconds more than 0 and at most 3600`)."""

from __future__ import annotations

import math
import re
import sys
import types
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache, cached_property
from typing import Annotated, Any, Literal, Optional, TypeVar, Union, get_args, get_origin, get_type_hints

import msgspec

from hwtop.model.safe_text import printable
from hwtop.session.config_error import ConfigError

T = TypeVar("T")
SHOWN_CHARS = 40  # of a wrong value, in the message
_WHERE = re.compile(r"^(?P<what>.*) - at `(?P<path>\$[^`]*)`$", re.DOTALL)
_UNKNOWN = re.compile(r"^Object contains unknown field `(?P<name>.*)`$", re.DOTALL)
_STEP = re.compile(r"\.([^.\[]+)|\[[^\]]*\]")


@dataclass(frozen=True, slots=True)
class Range:
    low: float
    high: float = math.inf
    low_open: bool = False  # `low` itself is not allowed (an interval of 0 seconds)
    what: str = "a number"

    def allows(self, value: float) -> bool:
        return math.isfinite(value) and (value > self.low if self.low_open else value >= self.low) \
            and value <= self.high

    def meta(self) -> msgspec.Meta:
        """The range as msgspec checks it: finite (NaN fails every bound, infinity the highest float)."""
        high = min(self.high, sys.float_info.max)
        return msgspec.Meta(gt=self.low, le=high) if self.low_open else msgspec.Meta(ge=self.low, le=high)

    def __str__(self) -> str:
        if self.high == math.inf:
            return f"{self.what} more than {self.low:g}" if self.low_open else f"{self.what} of {self.low:g} or more"
        if self.low_open:
            return f"{self.what} more than {self.low:g} and at most {self.high:g}"
        return f"{self.what} from {self.low:g} to {self.high:g}"


@dataclass(frozen=True)  # not slotted: its Struct is made once, on first use (a cached_property)
class Names:
    """The names a `dict[str, float]` table may hold (`kind`: what a name is, for the message), each its range."""

    kind: str
    ranges: Mapping[str, Range]

    def check(self, table: Mapping[str, float], key: str) -> None:
        """ConfigError for a name that is none of `ranges`, or a number outside its range."""
        try:
            msgspec.convert(table, self._struct, strict=True)
        except msgspec.ValidationError as error:
            raise ConfigError(_message(self._struct, table, str(error), key)) from None

    @cached_property
    def _struct(self) -> type[msgspec.Struct]:
        """The table as a Struct, a field per name (its numbers checked by msgspec, an unknown name refused)."""
        fields = [(f"n{index}", Optional[Annotated[float, allowed.meta(), allowed]],  # noqa: UP045 - a runtime type
                   msgspec.field(default=None, name=name)) for index, (name, allowed) in enumerate(self.ranges.items())]
        struct = msgspec.defstruct("Names", fields, frozen=True, forbid_unknown_fields=True)
        _KINDS[struct] = self.kind
        return struct


_KINDS: dict[type, str] = {}  # what a name of a Names table's Struct is ("advice threshold"), for "unknown …"


def shown(value: object) -> str:
    """A value as the message quotes it: TOML's true/false, short, control characters visible."""
    text = str(value).lower() if isinstance(value, bool) else repr(value)
    return printable(text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…")


def parse(schema: type[T], document: object) -> T:
    """`document` (a parsed TOML table) as an instance of the Struct `schema`; missing keys take their defaults."""
    try:
        result = msgspec.convert(document, schema, strict=True)
    except msgspec.ValidationError as error:
        raise ConfigError(_message(schema, document, str(error))) from None
    _check_names(schema, document, "")
    return result


def _check_names(schema: type, document: object, key: str) -> None:
    """Each Names table of a decoded document, checked against its names and their ranges (the values as the
    document wrote them: `-1`, not `-1.0`)."""
    if not isinstance(document, dict):
        return
    for name, hint in _fields(schema).items():
        if name not in document:
            continue
        where = f"{key}.{name}" if key else name
        names = _names_of(hint)
        if names is not None:
            names.check(document[name], where)
        else:
            _check_names(_bare(hint), document[name], where)


def _message(schema: type, document: object, error: str, key: str = "") -> str:
    """msgspec's `error` on `document` as the one line of the schema's words."""
    found = _WHERE.match(error)
    what, path = (found["what"], found["path"]) if found else (error, "$")
    hint: Any = schema
    value = document
    for step in _STEP.finditer(path[1:]):
        name = step.group(1)
        if name is None or _names_of(hint) is not None:
            break  # an item of a list, or a value of a names table: the message is about the whole
        hint, value = _fields(_bare(hint)).get(name, Any), value.get(name) if isinstance(value, dict) else None
        key = f"{key}.{name}" if key else name
    names = _names_of(hint)
    if names is not None and isinstance(value, dict):
        names.check(value, key)  # which name, which value: raises
    unknown = _UNKNOWN.match(what)
    if unknown is not None:
        where = f"{key}.{unknown['name']}" if key else unknown["name"]
        kind = _KINDS.get(_bare(hint))
        known = ", ".join(_fields(_bare(hint)))
        return f"{printable(where)}: unknown {kind or 'key'}; known: {known}"
    if not found:
        return printable(error)
    return f"{printable(key)} = {shown(value)}: expected {describe(hint)}"


@cache
def _fields(struct: type) -> dict[str, Any]:
    """A Struct's fields by the names a document gives them, with their annotations (Annotated kept)."""
    if not (isinstance(struct, type) and issubclass(struct, msgspec.Struct)):
        return {}
    hints = get_type_hints(struct, include_extras=True)
    return {f.encode_name: hints[f.name] for f in msgspec.structs.fields(struct)}


def _bare(hint: Any) -> Any:  # noqa: ANN401 - an annotation
    """The type under Annotated and `| None`."""
    if get_origin(hint) is Annotated:
        return _bare(get_args(hint)[0])
    if get_origin(hint) in (Union, types.UnionType):
        inner = [arg for arg in get_args(hint) if arg is not type(None)]
        return _bare(inner[0]) if len(inner) == 1 else hint
    return hint


def _names_of(hint: Any) -> Names | None:  # noqa: ANN401 - an annotation
    if get_origin(hint) is Annotated:
        return next((meta for meta in get_args(hint)[1:] if isinstance(meta, Names)), None)
    return None


def describe(hint: Any) -> str:  # noqa: ANN401 - an annotation
    """What a value of this annotation looks like, in words."""
    origin, args = get_origin(hint), get_args(hint)
    if origin is Annotated:
        meta = next((m for m in args[1:] if isinstance(m, Range | Names)), None)
        if isinstance(meta, Range):
            return str(meta)
        if isinstance(meta, Names):
            return f"a table of {meta.kind} names"
        return describe(args[0])
    if origin in (Union, types.UnionType):
        return " or ".join(describe(arg) for arg in args if arg is not type(None))
    if isinstance(hint, type) and issubclass(hint, msgspec.Struct):
        return f"a table with keys {', '.join(_fields(hint))}"
    if origin is Literal:
        return "one of " + ", ".join(map(str, args))
    if origin is tuple:
        inner = get_args(args[0]) if get_origin(args[0]) is Literal else ()
        return "a list of any of: " + ", ".join(map(str, inner)) if inner else f"a list of {describe(args[0])}"
    return {float: "a number", str: "a string"}.get(hint, getattr(hint, "__name__", str(hint)))
