"""What a round asks Prometheus, cut to what the fleet draws: each GPU field on its own with only the labels a row
reads, the targets that are down (not every target), and the utilisation trend only for the points not read yet."""

from __future__ import annotations

import urllib.parse

from hwtop.fleet.prometheus import ROW_LABELS, queries
from hwtop.fleet.session import FleetSession
from hwtop.fleet.sources import PrometheusSource
from tests.fleet.test_prometheus import Replay


def test_gpu_fields_come_with_the_labels_a_row_reads_and_up_only_where_down() -> None:
    asked = {q.key: q.promql for q in queries('job="train"', 1.8e9)}
    assert asked["gpu:DCGM_FI_DEV_GPU_UTIL"] == \
        f'max by ({", ".join(ROW_LABELS)}) (DCGM_FI_DEV_GPU_UTIL{{job="train"}})'
    assert asked["gpu:DCGM_FI_DEV_FB_USED"] == \
        'max by (Hostname, hostname, instance, UUID, gpu) (DCGM_FI_DEV_FB_USED{job="train"})'
    assert asked["up"] == 'up{job="train"} == 0'
    assert not any("DCGM" in promql for key, promql in asked.items() if not key.startswith(("gpu:", "trend")))


def test_the_trend_is_asked_once_a_point_for_the_points_not_read() -> None:
    replay = Replay("dcgm-node-exporter")
    step = replay.recording["now"] // 20 * 20
    now = [step + 3.0]  # 3 s into a 20 s step
    ranges: list[tuple[float, float]] = []

    def getter(url: str, timeout: float, limit: int) -> bytes:
        params = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))
        if "start" in params:
            ranges.append((float(params["start"]), float(params["end"])))
        return replay(url, timeout, limit)

    session = FleetSession(PrometheusSource("http://p:9090", "", interval=2.0, timeout=3.0, getter=getter,
                                            wall=lambda: now[0]))
    try:
        session.round()
        assert ranges == [(step - 600, step)]  # the whole window, to the last whole step
        trend = {v.name: v.trend for v in session.frame.hosts}
        assert len(trend["node-a"]) >= 2, trend
        now[0] += 2.0
        session.round()
        assert len(ranges) == 1  # no new point: not asked
        assert {v.name: v.trend for v in session.frame.hosts} == trend  # the points read are kept
        now[0] += 20.0
        session.round()
        assert ranges[1:] == [(step + 20, step + 20)]  # only the new point
    finally:
        session.close()
