"""The exporter serves the network under node-exporter's names (counters, speed, up) and hwtop's per-port rates;
a real Prometheus scrapes them (slow)."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from hwtop.exporter.metrics import families
from hwtop.exporter.text import render
from hwtop.model.snapshot import NicSnapshot, Snapshot
from tests.prometheus_rig import PROMETHEUS, HwtopExporter, Prometheus

NICS = (
    NicSnapshot("eno1", "ethernet", 25.0, 1e6, 2e6, state="up", rx_bytes_total=1000, tx_bytes_total=2000),
    NicSnapshot("lo", "loopback", None, 5.0, 5.0, state="unknown", rx_bytes_total=77, tx_bytes_total=77),
    NicSnapshot('ev"il\n0', "virtual", None, None, None, state="down", rx_bytes_total=1, tx_bytes_total=1),
    NicSnapshot("mlx5_0", "infiniband", 200.0, 20e9, 5e9, state="active", port=1, rx_bytes_total=4 * 10**12,
                tx_bytes_total=None),
)


def samples(nics: tuple[NicSnapshot, ...]) -> dict[str, list[tuple[dict[str, str], float]]]:
    snapshot = Snapshot(time=1.0, interval_s=1.0, host=None, cpu=None, memory=None, numa=None, nics=nics)
    text = render(families(snapshot, (), "test", hostname="node-a")).decode()
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, []).append((sample.labels, sample.value))
    return out


def test_node_exporter_names_and_units() -> None:
    got = samples(NICS)
    assert {s[0]["device"]: s[1] for s in got["node_network_receive_bytes_total"]} == {
        "eno1": 1000, "lo": 77, 'ev"il\n0': 1}  # every interface, as node-exporter has them
    assert {s[0]["device"]: s[1] for s in got["node_network_transmit_bytes_total"]}["eno1"] == 2000
    assert got["node_network_speed_bytes"] == [({"device": "eno1", "Hostname": "node-a"}, 25e9 / 8)]
    assert {s[0]["device"]: s[1] for s in got["node_network_up"]} == {"eno1": 1, "lo": 0, 'ev"il\n0': 0}
    assert got["node_infiniband_port_data_received_bytes_total"] == [
        ({"device": "mlx5_0", "port": "1", "Hostname": "node-a"}, 4e12)]
    assert "node_infiniband_port_data_transmitted_bytes_total" not in got  # a saturated counter: no sample
    assert got["node_infiniband_rate_bytes_per_second"][0][1] == 25e9
    rates = {(s[0]["device"], s[0]["direction"]): s[1] for s in got["hwtop_network_port_bytes_per_second"]}
    assert rates == {("eno1", "rx"): 1e6, ("eno1", "tx"): 2e6, ("mlx5_0", "rx"): 20e9, ("mlx5_0", "tx"): 5e9}
    ratios = {s[0]["device"]: s[1] for s in got["hwtop_network_port_line_ratio"]}
    assert ratios == {"eno1": pytest.approx(16e6 / 25e9), "mlx5_0": pytest.approx(0.8)}


@pytest.mark.slow
@pytest.mark.skipif(PROMETHEUS is None, reason="needs prometheus (Debian's package)")
def test_a_real_prometheus_reads_the_ports_as_node_exporter_dashboards_query_them() -> None:
    exporter = HwtopExporter("dgx-a100:nccl-ethernet", "node-net")  # two nodes over InfiniBand for 40 s
    prometheus = None
    try:
        prometheus = Prometheus({"net": [(exporter.target, "/metrics", {})]})
        prometheus.wait_for_scrapes(1, scrapes=6)
        received = prometheus.query('rate(node_infiniband_port_data_received_bytes_total{device="mlx5_0"}[4s])')
        assert len(received) == 1 and received[0]["metric"]["port"] == "1"
        rate = float(received[0]["value"][1])
        per_port = 2 * 15 / 16 * 5.2e9 / 0.86 / 8  # a node's share of the story's all-reduce, per port: 1.42 GB/s
        assert 0.9 * per_port < rate < 1.1 * per_port
        up = prometheus.query('node_network_up{device="enp225s0f0"}')
        assert [float(r["value"][1]) for r in up] == [1.0]
        busiest = prometheus.query("topk(1, hwtop_network_port_line_ratio)")
        assert busiest and busiest[0]["metric"]["kind"] == "infiniband"
        counters = prometheus.query('node_network_transmit_bytes_total{device="enp225s0f1"}')
        assert counters and float(counters[0]["value"][1]) > 0
    finally:
        if prometheus is not None:
            prometheus.close()
        exporter.close()
