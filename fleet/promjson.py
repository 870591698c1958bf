"""Prometheus' HTTP API answers, read so that the UI's thread is never held long. A decode of a whole answer is one
C call that holds the interpreter lock for as long as it takes: the UI's thread, waiting on that lock, freezes for
all of it. Here msgspec scans the answer's frame without decoding the series (each kept as its bytes), then decodes
them into typed records (the labels and the value only, checked in C) a batch of BATCH_BYTES at a time, so the lock
changes hands between batches, and `vector` yields a batch's series before the next is made (no tree of every
answer at once). Answers are untrusted: anything else is a FetchError of one line, which says where msgspec found
the fault (`Prometheus answer: Expected `str`, got `int` - at `$.data.result[3].metric[...]``), or what
Prometheus said went wrong."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Literal, TypeVar

import msgspec

from hwtop.fleet.http import FetchError

Vector = list[tuple[dict[str, str], float]]  # an instant vector: (labels, value) a series
Matrix = list[tuple[dict[str, str], list[tuple[float, float]]]]

NOT_JSON = "not a Prometheus API answer (not JSON)"
T = TypeVar("T")
BATCH_BYTES = 1 << 18  # of series decoded in one call, holding the interpreter lock (benchmarks/README.md)


class _Instant(msgspec.Struct, gc=False):
    metric: dict[str, str]
    value: tuple[float, str]


class _Range(msgspec.Struct, gc=False):
    metric: dict[str, str]
    values: list[tuple[float, str]]


class _Data(msgspec.Struct, gc=False):
    resultType: str  # noqa: N815 - Prometheus's own key
    result: list[msgspec.Raw]  # each series' bytes, found, not decoded


class _Answer(msgspec.Struct, gc=False):
    status: Literal["success"]
    data: _Data


class _Status(msgspec.Struct, gc=False):
    """Any answer, as far as saying why it is not a plain success."""

    status: object = None
    error: object = None
    data: object = None


_ANSWER = msgspec.json.Decoder(_Answer)
_STATUS = msgspec.json.Decoder(_Status)
_INSTANTS = msgspec.json.Decoder(list[_Instant])
_RANGES = msgspec.json.Decoder(list[_Range])
_INSTANT = msgspec.json.Decoder(_Instant)
_RANGE = msgspec.json.Decoder(_Range)
_AT = re.compile(r" - at `\$")


def _expected(kind: str) -> FetchError:
    return FetchError(f"Prometheus answer: expected {'an instant' if kind == 'vector' else 'a range'} vector")


def _frame(body: bytes, kind: str) -> list[msgspec.Raw]:
    """Each series' bytes, the answer's frame scanned in one call that does not decode them; FetchError where the
    answer is not a plain success of `kind`, saying why."""
    try:
        data = _ANSWER.decode(body).data
    except msgspec.DecodeError:
        raise _refusal(body, kind) from None
    if data.resultType != kind:
        raise _expected(kind)
    return data.result


def _refusal(body: bytes, kind: str) -> FetchError:
    """Why an answer is not a plain success: not JSON, Prometheus's own error, or data of another kind."""
    try:
        answer = _STATUS.decode(body)
    except (msgspec.DecodeError, RecursionError):
        return FetchError(NOT_JSON)
    if answer.status != "success":
        return FetchError(f"Prometheus: {str(answer.error or answer.status)[:200]}")
    return _expected(kind)


def _located(error: Exception, index: int) -> FetchError:
    """msgspec's fault in the series at `index`, where it is in the answer."""
    said, here = str(error), f" - at `$.data.result[{index}]"
    where = _AT.sub(here, said, count=1) if _AT.search(said) else f"{said}{here}`"
    return FetchError(f"Prometheus answer: {where}")


def _number(text: str, index: int, where: str) -> float:
    try:
        return float(text)  # "NaN", "+Inf" included: callers skip what is not finite
    except ValueError:
        raise FetchError(f"Prometheus answer: a value is not a number - at `$.data.result[{index}].{where}`") \
            from None


def _records(raws: list[msgspec.Raw], size: int, batch: msgspec.json.Decoder[list[T]],
             one: msgspec.json.Decoder[T]) -> Iterator[list[T]]:
    """Typed records a batch of series at a time, so the interpreter lock changes hands between batches. A batch
    that does not decode is decoded series by series: those before the fault are given, the fault is one line."""
    step = max(1, len(raws) * BATCH_BYTES // max(1, size))
    for at in range(0, len(raws), step):
        chunk = raws[at:at + step]
        try:
            yield batch.decode(b"[" + b",".join(chunk) + b"]")
            continue
        except msgspec.DecodeError:
            pass
        good = []
        for index, raw in enumerate(chunk, start=at):
            try:
                good.append(one.decode(raw))
            except msgspec.DecodeError as error:
                yield good
                raise _located(error, index) from None
        yield good


def vector(body: bytes) -> Iterator[tuple[dict[str, str], float]]:
    """An instant vector's series, a batch decoded at a time (one batch's records alive at once)."""
    index = 0
    for batch in _records(_frame(body, "vector"), len(body), _INSTANTS, _INSTANT):
        for item in batch:
            yield item.metric, _number(item.value[1], index, "value[1]")
            index += 1


def parse_vector(body: bytes) -> Vector:
    return list(vector(body))


def parse_matrix(body: bytes) -> Matrix:
    out: Matrix = []
    for batch in _records(_frame(body, "matrix"), len(body), _RANGES, _RANGE):
        for item in batch:
            index = len(out)
            out.append((item.metric, [(stamp, _number(value, index, f"values[{at}][1]"))
                                      for at, (stamp, value) in enumerate(item.values)]))
    return out


def parse_targets(body: bytes) -> dict[tuple[str, str], str]:
    """(job, instance) → the last scrape error of each active target that has one (a small answer: read whole)."""
    try:
        answer = json.loads(body)
    except (ValueError, RecursionError):
        raise FetchError(NOT_JSON) from None
    if not isinstance(answer, dict):
        raise FetchError("not a Prometheus API answer")
    if answer.get("status") != "success":
        raise FetchError(f"Prometheus: {str(answer.get('error') or answer.get('status'))[:200]}")
    data = answer.get("data")
    active = data.get("activeTargets") if isinstance(data, dict) else None
    if not isinstance(active, list):
        raise FetchError("Prometheus answer: expected activeTargets")
    errors: dict[tuple[str, str], str] = {}
    for target in active:
        labels = target.get("labels") if isinstance(target, dict) else None
        error = target.get("lastError") if isinstance(target, dict) else None
        if isinstance(labels, dict) and isinstance(error, str) and error:
            errors[(str(labels.get("job", "")), str(labels.get("instance", "")))] = error
    return errors
