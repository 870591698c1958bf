"""Prometheus' HTTP API answers, read so that the UI's thread is never held long. A decode of a whole answer is one
C call that holds the interpreter lock for as long as it takes: the UI's thread, waiting on that lock, freezes for
all of it. Here msgspec scans the answer's frame without decoding the series (each kept as its bytes), then decodes
them into typed records (the labels and the value only, checked in C) a batch of BATCH_BYTES at a time, so the lock
changes hands between batches, and `vector` yields a batch's series before the next is made (no tree of every
answer at once). An answer msgspec refuses is walked instead, series by series, by the json module: Prometheus
writes `{"status":"success","data":{"resultType":...,"result":[...]}}` in that order (another order is read whole),
and the walk says in one line what is wrong. Answers are untrusted: anything unexpected is a FetchError."""

from __future__ import annotations

import json
import re
from collections.abc import Generator, Iterator
from typing import Literal, TypeVar

import msgspec

from hwtop.fleet.http import FetchError

Vector = list[tuple[dict[str, str], float]]  # an instant vector: (labels, value) a series
Matrix = list[tuple[dict[str, str], list[tuple[float, float]]]]

_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"[ \t\n\r]*")
_BLANK = frozenset(" \t\n\r")
NOT_JSON = "not a Prometheus API answer (not JSON)"


def _skip(text: str, at: int) -> int:
    if text[at:at + 1] not in _BLANK:  # Prometheus writes none: the usual case costs one look
        return at
    match = _SPACE.match(text, at)
    return match.end() if match else at


def _expect(text: str, at: int, char: str) -> int:
    at = _skip(text, at)
    if text[at:at + 1] != char:
        raise ValueError(f"expected {char!r}")
    return at + 1


def _next(text: str, at: int, close: str) -> tuple[int, bool]:
    """After a member: past its comma (True: another follows) or its closing bracket (False)."""
    at = _skip(text, at)
    char = text[at:at + 1]
    if char == ",":
        return at + 1, True
    if char == close:
        return at + 1, False
    raise ValueError(f"expected ',' or {close!r}")


def _key(text: str, at: int) -> tuple[str, int]:
    key, at = _DECODER.raw_decode(text, _skip(text, at))
    if not isinstance(key, str):
        raise ValueError("a key is not a string")
    return key, _skip(text, _expect(text, at, ":"))


class _OutOfOrder(Exception):
    """data.result came before data.resultType: read the answer whole."""


def _expected(kind: str) -> FetchError:
    return FetchError(f"Prometheus answer: expected {'an instant' if kind == 'vector' else 'a range'} vector")


def _array(text: str, at: int) -> Generator[object, None, int]:
    """Each member of the array at `at` ('['), decoded on its own; returns where the array ends."""
    at = _skip(text, _expect(text, at, "["))
    if text[at:at + 1] == "]":
        return at + 1
    more = True
    while more:
        item, at = _DECODER.raw_decode(text, _skip(text, at))
        yield item
        at, more = _next(text, at, "]")
    return at


def _data(text: str, at: int, kind: str) -> Generator[object, None, int]:
    """The members of data.result, data.resultType being `kind`; returns where data ends."""
    at = _skip(text, _expect(text, at, "{"))
    found, result = None, False
    more = text[at:at + 1] != "}"
    at = at if more else at + 1
    while more:
        key, at = _key(text, at)
        if key == "result":
            if found is None:
                raise _OutOfOrder
            if found != kind:
                raise _expected(kind)
            at = yield from _array(text, at)
            result = True
        else:
            value, at = _DECODER.raw_decode(text, at)
            if key == "resultType":
                found = value
        at, more = _next(text, at, "}")
    if found != kind or not result:
        raise _expected(kind)
    return at


def _whole(text: str, kind: str) -> Iterator[object]:
    """An answer in an order other than Prometheus's, decoded in one piece."""
    answer = json.loads(text)
    if not isinstance(answer, dict):
        raise FetchError("not a Prometheus API answer")
    if answer.get("status") != "success":
        raise FetchError(f"Prometheus: {str(answer.get('error') or answer.get('status'))[:200]}")
    data = answer.get("data")
    if not isinstance(data, dict) or data.get("resultType") != kind or not isinstance(data.get("result"), list):
        raise _expected(kind)
    yield from data["result"]


def series(body: bytes, kind: str) -> Iterator[object]:
    """Each member of an answer's data.result, where data.resultType is `kind` (vector | matrix)."""
    text = body.decode("utf-8", "replace")
    status: object = None
    error: object = None
    streamed = False
    try:
        at = _skip(text, _expect(text, 0, "{"))
        more = text[at:at + 1] != "}"
        while more:
            key, at = _key(text, at)
            if key == "data" and status == "success":
                try:
                    at = yield from _data(text, at, kind)
                except _OutOfOrder:
                    yield from _whole(text, kind)
                    return
                streamed = True
            elif key == "data" and status is None:
                yield from _whole(text, kind)
                return
            else:
                value, at = _DECODER.raw_decode(text, at)
                if key == "status":
                    status = value
                elif key == "error":
                    error = value
            at, more = _next(text, at, "}")
    except (ValueError, RecursionError, IndexError):
        raise FetchError(NOT_JSON) from None
    if status != "success":
        raise FetchError(f"Prometheus: {str(error or status)[:200]}")
    if not streamed:
        raise _expected(kind)


_STRINGS = {str}


def labels_of(item: object) -> dict[str, str]:
    """A JSON object's keys are strings already: only the values are checked (in C: a set of their types)."""
    metric = item.get("metric") if type(item) is dict else None
    if type(metric) is not dict or not set(map(type, metric.values())) <= _STRINGS:
        raise FetchError("Prometheus answer: a series without string labels")
    return metric


def value_of(pair: object) -> float:
    if not isinstance(pair, list) or len(pair) != 2 or not isinstance(pair[1], str):
        raise FetchError("Prometheus answer: a sample is not [time, \"value\"]")
    try:
        return float(pair[1])  # "NaN", "+Inf" included: callers skip what is not finite
    except ValueError:
        raise FetchError("Prometheus answer: a value is not a number") from None


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


_ANSWER = msgspec.json.Decoder(_Answer)
_INSTANTS = msgspec.json.Decoder(list[_Instant])
_RANGES = msgspec.json.Decoder(list[_Range])


def _frame(body: bytes, kind: str) -> list[msgspec.Raw] | None:
    """Each series' bytes, the answer's frame scanned in one call that does not decode them; None where the answer
    is not a plain success of `kind` (the walk reads it, and says what is wrong)."""
    try:
        data = _ANSWER.decode(body).data
    except msgspec.DecodeError:
        return None
    return data.result if data.resultType == kind else None


def _batches(raws: list[msgspec.Raw], size: int, decoder: msgspec.json.Decoder[list[T]]) -> Iterator[list[T]]:
    """Typed records a batch of series at a time, so the interpreter lock changes hands between batches."""
    step = max(1, len(raws) * BATCH_BYTES // max(1, size))
    for at in range(0, len(raws), step):
        yield decoder.decode(b"[" + b",".join(raws[at:at + step]) + b"]")


def _walked(body: bytes) -> Iterator[tuple[dict[str, str], float]]:
    for item in series(body, "vector"):
        yield labels_of(item), value_of(item.get("value") if isinstance(item, dict) else None)


def vector(body: bytes) -> Iterator[tuple[dict[str, str], float]]:
    """An instant vector's series, a batch decoded at a time (one batch's records alive at once); an answer that is
    not what Prometheus writes is walked instead, from where the batches stopped, and the walk names the fault."""
    raws = _frame(body, "vector")
    done = 0
    if raws is not None:
        try:
            for batch in _batches(raws, len(body), _INSTANTS):
                values = [(item.metric, float(item.value[1])) for item in batch]
                yield from values
                done += len(values)
            return
        except (msgspec.DecodeError, ValueError):
            pass
    for index, pair in enumerate(_walked(body)):
        if index >= done:
            yield pair


def parse_vector(body: bytes) -> Vector:
    return list(vector(body))


def parse_matrix(body: bytes) -> Matrix:
    raws = _frame(body, "matrix")
    if raws is not None:
        try:
            return [(item.metric, [(stamp, float(value)) for stamp, value in item.values])
                    for batch in _batches(raws, len(body), _RANGES) for item in batch]
        except (msgspec.DecodeError, ValueError):
            pass  # the walk says what is wrong
    out = []
    for item in series(body, "matrix"):
        values = item.get("values") if isinstance(item, dict) else None
        if not isinstance(values, list):
            raise FetchError("Prometheus answer: a range series without values")
        points = []
        for pair in values:
            value = value_of(pair)
            if not isinstance(pair[0], int | float):
                raise FetchError("Prometheus answer: a sample time is not a number")
            points.append((float(pair[0]), value))
        out.append((labels_of(item), points))
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
