"""Snapshots back from JSON: the inverse of `Snapshot.to_dict`, driven by the records' own type hints, so
a recording replays into exactly the objects the live monitor made. Wrong shapes raise ValueError."""

from __future__ import annotations

import math
import sys
import types
import typing
from functools import cache
from typing import Any, Literal, Union

import msgspec

from hwtop.model import job, workload
from hwtop.model import snapshot as model


@cache
def _hints(cls: type) -> dict[str, Any]:
    """The record's field types, its names looked up where Snapshot's are (the snapshot, job and workload modules)
    and in the record's own module (an Owner's kind, a RAS reply's format)."""
    own = vars(sys.modules[cls.__module__])
    return typing.get_type_hints(cls, {**vars(model), **vars(job), **vars(workload), **own})


def decode(kind: Any, value: Any) -> Any:
    origin = typing.get_origin(kind)
    if kind is Any:
        return value
    if origin in (Union, types.UnionType):
        options = typing.get_args(kind)
        if value is None:
            if type(None) in options:
                return None
            raise ValueError("null where a value is required")
        errors = []
        for option in options:
            if option is type(None):
                continue
            try:
                return decode(option, value)
            except (ValueError, TypeError) as error:
                errors.append(str(error))
        raise ValueError("; ".join(errors))
    if origin is tuple:
        args = typing.get_args(kind)
        if not isinstance(value, list | tuple):
            raise ValueError(f"expected a list, got {type(value).__name__}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(decode(args[0], v) for v in value)
        if len(args) != len(value):
            raise ValueError(f"expected {len(args)} items, got {len(value)}")
        return tuple(decode(a, v) for a, v in zip(args, value, strict=True))
    if origin is dict:
        if not isinstance(value, dict):
            raise ValueError(f"expected an object, got {type(value).__name__}")
        return dict(value)
    if isinstance(kind, type) and issubclass(kind, msgspec.Struct):
        return decode_record(kind, value)
    if kind is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"expected a number, got {value!r}")
        return float(value)
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"expected an integer, got {value!r}")
        return value
    if kind is bool:
        if not isinstance(value, bool):
            raise ValueError(f"expected true/false, got {value!r}")
        return value
    if origin is Literal:
        if value not in typing.get_args(kind):
            raise ValueError(f"expected one of {', '.join(map(repr, typing.get_args(kind)))}, got {value!r}")
        return value
    if kind is str:
        if not isinstance(value, str):
            raise ValueError(f"expected a string, got {value!r}")
        return value
    raise TypeError(f"cannot decode {kind!r}")


def decode_record(cls: type[msgspec.Struct], value: Any) -> Any:
    if not isinstance(value, dict):
        raise ValueError(f"{cls.__name__}: expected an object, got {type(value).__name__}")
    hints = _hints(cls)
    kwargs = {}
    for name, required in _fields(cls):
        if name in value:
            try:
                kwargs[name] = decode(hints[name], value[name])
            except ValueError as error:
                raise ValueError(f"{cls.__name__}.{name}: {error}") from None
        elif required:
            raise ValueError(f"{cls.__name__}: missing {name!r}")
    return cls(**kwargs)


@cache
def _fields(cls: type[msgspec.Struct]) -> tuple[tuple[str, bool], ...]:
    """(name, required) of each field of a record, from the Struct's own attributes: msgspec.structs.fields()
    would evaluate annotations that are imported only for type checking."""
    names, defaults = cls.__struct_fields__, cls.__struct_defaults__  # defaults: those of the last fields
    return tuple((name, index < len(names) - len(defaults)) for index, name in enumerate(names))


def snapshot_from_dict(data: dict[str, Any]) -> model.Snapshot:
    return decode_record(model.Snapshot, data)


D = typing.TypeVar("D", bound=msgspec.Struct)


def lenient_record(cls: type[D], record: dict[str, Any]) -> D:
    """`cls` from a record another program wrote (the job's telemetry): each field whose value has the declared
    type is taken, anything else (missing, wrong type, NaN where a count belongs) keeps the field's default, so a
    job of another version degrades to N/A instead of a wrong figure or an exception."""
    hints = _hints(cls)
    kwargs = {}
    for name, _required in _fields(cls):
        if name in record:
            try:
                value = decode(hints[name], record[name])
            except (ValueError, TypeError):
                continue
            if isinstance(value, float) and not math.isfinite(value):
                continue  # a NaN speedup or an infinite time is no figure: N/A
            kwargs[name] = value
    return cls(**kwargs)
