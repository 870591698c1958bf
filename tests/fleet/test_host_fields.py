"""Temperature, power and tensor activity are drawn only on one host's screen: a round asks them for the host
that is open, in one query by its Hostname (either spelling), and not at all while no host is open."""

from __future__ import annotations

import urllib.parse

from hwtop.fleet.prometheus import HOST_FIELDS, queries
from hwtop.fleet.sources import Ask, PrometheusSource
from tests.fleet.test_job import URL, matrix, series, vector

GPU = {"gpu": "0", "UUID": "GPU-a", "Hostname": "node-0", "instance": "node-0:9400"}


class Fields:
    """A Prometheus answering the GPU queries of one host: utilisation for the table, its own fields by name."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def __call__(self, url: str, timeout: float, limit: int) -> bytes:
        promql = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query)).get("query", "")
        self.asked.append(promql)
        if "query_range" in url:
            return matrix()
        if "DCGM_FI_DEV_GPU_UTIL" in promql:
            return vector(series("", 90, **GPU, job="dcgm", modelName="NVIDIA H100"))
        if "DCGM_FI_DEV_GPU_TEMP" in promql:
            return vector(series("DCGM_FI_DEV_GPU_TEMP", 61, **GPU), series("DCGM_FI_DEV_POWER_USAGE", 412.5, **GPU),
                          series("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", 0.4, **GPU))
        return vector()


def _own_fields(asked: list[str]) -> list[str]:
    return [q for q in asked if any(name in q for name in HOST_FIELDS)]


def test_no_host_open_asks_none_of_its_fields() -> None:
    assert _own_fields([q.promql for q in queries("", 1000.0)]) == []
    getter = Fields()
    source = PrometheusSource(URL, getter=getter)
    try:
        got = source.read(Ask())
    finally:
        source.close()
    assert _own_fields(getter.asked) == []
    assert got.hosts is not None and got.hosts[0].gpus[0].util == 90 and got.hosts[0].gpus[0].temperature is None


def test_the_open_host_gets_its_temperature_power_and_tensor_in_one_query() -> None:
    getter = Fields()
    source = PrometheusSource(URL, getter=getter)
    try:
        got = source.read(Ask(host="node-0"))
    finally:
        source.close()
    [asked] = _own_fields(getter.asked)
    assert 'Hostname="node-0"' in asked and 'hostname="node-0"' in asked
    assert got.hosts is not None and got.problem is None
    row = got.hosts[0].gpus[0]
    assert (row.util, row.temperature, row.power, row.tensor_active) == (90, 61, 412.5, 0.4)


def test_a_hostile_host_name_stays_one_promql_string() -> None:
    [asked] = _own_fields([q.promql for q in queries("", 1000.0, host='x"} or up{a="\n')])
    assert 'Hostname="x\\"} or up{a=\\"\\n"' in asked and asked.count("{") == 2 + asked.count('\\"}')
