"""Records back from JSON: the inverse of `Snapshot.to_dict` (msgspec.to_builtins), decoded by msgspec from the
records' own type hints, so a recording replays into exactly the objects the live monitor made. A wrong shape
raises msgspec.ValidationError (a ValueError) saying what was expected and where: `Expected `array`, got `str` -
at `$.cpu.cores``, the line a corrupt recording's error quotes."""

from __future__ import annotations

import math
import sys
import typing
from functools import cache
from typing import Any, TypeVar

import msgspec

# The snapshot names these two models in full (hwtop.model.job.JobSnapshot): a tick without a job or a workload
# never loads them, and msgspec, decoding a recording that has both, finds them loaded.
from hwtop.model import job, workload  # noqa: F401
from hwtop.model import snapshot as model

R = TypeVar("R", bound=msgspec.Struct)


def decode(kind: Any, value: Any) -> Any:  # noqa: ANN401 - any type the records use, and its value
    """`value` (from JSON) as `kind`: a record, a tuple, a Literal's word, a number."""
    return msgspec.convert(value, kind, strict=True)


def decode_record(cls: type[R], value: Any) -> R:  # noqa: ANN401 - a parsed JSON value
    return msgspec.convert(value, cls, strict=True)


def snapshot_from_dict(data: dict[str, Any]) -> model.Snapshot:
    return msgspec.convert(data, model.Snapshot, strict=True)


@cache
def _hints(cls: type) -> dict[str, Any]:
    """The record's field types, resolved in its own module."""
    return typing.get_type_hints(cls, vars(sys.modules[cls.__module__]))


def lenient_record(cls: type[R], record: dict[str, Any]) -> R:
    """`cls` from a record another program wrote (the job's telemetry): each field whose value has the declared
    type is taken, anything else (missing, wrong type, NaN where a count belongs) keeps the field's default, so a
    job of another version degrades to N/A instead of a wrong figure or an exception."""
    hints = _hints(cls)
    kwargs = {}
    for name, key in zip(cls.__struct_fields__, cls.__struct_encode_fields__, strict=True):  # key: as written
        if key not in record:
            continue
        try:
            value = msgspec.convert(record[key], hints[name], strict=True)
        except msgspec.ValidationError:
            continue
        if isinstance(value, float) and not math.isfinite(value):
            continue  # a NaN speedup or an infinite time is no figure: N/A
        kwargs[name] = value
    return cls(**kwargs)

