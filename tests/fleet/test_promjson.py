"""Prometheus answers read series by series (fleet/promjson.py) give what a whole-document read gives: in
Prometheus's own order and spacing, pretty-printed, with keys in another order, and as one line of error for
anything else."""

from __future__ import annotations

import json

import pytest

from hwtop.fleet.http import FetchError
from hwtop.fleet.promjson import parse_matrix, parse_vector

SERIES = [{"metric": {"__name__": "up", "instance": f"h{i}:9400", "job": "dcgm"}, "value": [1.8e9, str(i % 2)]}
          for i in range(5)]
EXPECTED = [(s["metric"], float(s["value"][1])) for s in SERIES]


@pytest.mark.parametrize("body", [
    json.dumps({"status": "success", "data": {"resultType": "vector", "result": SERIES}}, separators=(",", ":")),
    json.dumps({"status": "success", "data": {"resultType": "vector", "result": SERIES}}, indent=2),
    json.dumps({"data": {"result": SERIES, "resultType": "vector"}, "status": "success"}),
    json.dumps({"status": "success", "data": {"result": SERIES, "resultType": "vector"}, "warnings": ["x"]}),
])
def test_every_spelling_of_an_answer_reads_the_same(body: str) -> None:
    assert parse_vector(body.encode()) == EXPECTED


def test_an_empty_vector_and_a_matrix() -> None:
    assert parse_vector(b'{"status":"success","data":{"resultType":"vector","result":[]}}') == []
    body = b'{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"a":"b"},"values":[[1,"2"]]}]}}'
    assert parse_matrix(body) == [({"a": "b"}, [(1.0, 2.0)])]


@pytest.mark.parametrize(("body", "said"), [
    (b'{"status":"error","errorType":"bad_data","error":"parse error"}', "Prometheus: parse error"),
    (b'{"status":"success","data":{"resultType":"matrix","result":[]}}', "expected an instant vector"),
    (b'{"status":"success","data":{"resultType":"vector"}}', "expected an instant vector"),
    (b'{"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":1},"value":[1,"2"]}]}}',
     "Prometheus answer: Expected `str`, got `int` - at `$.data.result[0].metric[...]`"),
    (b'{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"x"]}]}}',
     "Prometheus answer: a value is not a number - at `$.data.result[0].value[1]`"),
    (b'{"status":"success","data":{"resultType":"vector","result":[{"metric":{}},{"metric":{},"value":[1,"2"]}]}}',
     "Prometheus answer: Object missing required field `value` - at `$.data.result[0]`"),
    (b'{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"2"]},{"metric":{},'
     b'"value":["now","2"]}]}}', "Prometheus answer: Expected `float`, got `str` - at `$.data.result[1].value[0]`"),
    (b'{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"2"]},', "not JSON"),
    (b"<html>502</html>", "not JSON"),
    (b"[" * 100000, "not JSON"),
    (b"", "not JSON"),
])
def test_anything_else_is_one_line(body: bytes, said: str) -> None:
    with pytest.raises(FetchError) as raised:
        parse_vector(body)
    assert said in str(raised.value) and "\n" not in str(raised.value)


def test_a_big_answer_read_in_batches_is_the_whole_answer_and_a_bad_series_late_in_it_is_one_line() -> None:
    """Over BATCH_BYTES the series are decoded a batch at a time: every series once, in order; a series Prometheus
    would not write, far into the answer, is named where it is (the series before it given once)."""
    from hwtop.fleet import promjson

    many = [{"metric": {"__name__": "up", "instance": f"h{i}:9400", "pad": "x" * 200}, "value": [1.8e9, str(i)]}
            for i in range(5000)]
    body = json.dumps({"status": "success", "data": {"resultType": "vector", "result": many}}).encode()
    assert len(body) > 4 * promjson.BATCH_BYTES
    assert parse_vector(body) == [(s["metric"], float(s["value"][1])) for s in many]
    many[4000]["value"] = [1.8e9, "x"]
    bad = json.dumps({"status": "success", "data": {"resultType": "vector", "result": many}}).encode()
    seen: list[float] = []
    with pytest.raises(FetchError, match=r"a value is not a number - at `\$\.data\.result\[4000\]\.value\[1\]`"):
        for _, value in promjson.vector(bad):
            seen.append(value)
    assert seen == [float(i) for i in range(4000)]
    many[4000]["value"], many[4100]["metric"]["pad"] = [1.8e9, "4000"], 4100  # a wrong type: msgspec's batch fails
    bad = json.dumps({"status": "success", "data": {"resultType": "vector", "result": many}}).encode()
    seen.clear()
    with pytest.raises(FetchError, match=r"Expected `str`, got `int` - at `\$\.data\.result\[4100\]\.metric\["):
        for _, value in promjson.vector(bad):
            seen.append(value)
    assert seen == [float(i) for i in range(4100)]
