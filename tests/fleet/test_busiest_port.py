"""The fleet shows each host's busiest network port, read from an exporter's hwtop_network_port_* series."""

from __future__ import annotations

from hwtop.exporter.metrics import families
from hwtop.exporter.text import render
from hwtop.fleet.scrape import parse
from hwtop.model.snapshot import NicSnapshot, Snapshot
from hwtop.tui.fleet.cells import port as _port


def page(nics: tuple[NicSnapshot, ...]) -> str:
    snapshot = Snapshot(time=1.0, interval_s=1.0, host=None, cpu=None, memory=None, numa=None, nics=nics)
    return render(families(snapshot, (), "test", hostname="node-a")).decode()


def test_the_busiest_port_of_a_host() -> None:
    nics = (NicSnapshot("mlx5_0", "infiniband", 200.0, 1e9, 3e9, port=1),
            NicSnapshot("mlx5_1", "infiniband", 200.0, 12e9, 2e9, port=2),
            NicSnapshot("eno1", "ethernet", 1.0, 1e5, 1e5),
            NicSnapshot("lo", "loopback", None, 9e12, 9e12))  # loopback is no port of the network
    view = parse("http://node-a:9400/metrics", page(nics))
    port = view.busiest_port
    assert port is not None and (port.label, port.kind, port.busiest) == ("mlx5_1/2", "infiniband", 12e9)
    assert port.line_ratio is not None and abs(port.line_ratio - 0.48) < 1e-9
    assert _port(view).plain == "mlx5_1/2 12.0GB/s 48%"  # the fleet table's NETWORK cell
    empty = parse("x", page(()))
    assert empty.busiest_port is None and _port(empty).plain == "N/A"


def test_through_prometheus_each_host_names_its_busiest_port() -> None:
    """The `ports` query answered by a real Prometheus 2.42 scraping two `hwtop export` demos (recorded)."""
    import json
    from pathlib import Path

    from hwtop.fleet.prometheus import assemble, parse_answers
    from hwtop.fleet.promjson import vector

    recording = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "prometheus" /
                            "hwtop-two-hosts.json").read_text())
    bodies = {key: json.dumps(answer["body"]).encode() for key, answer in recording["answers"].items()}
    answers, errors = parse_answers(bodies)
    assert not errors
    views = {v.name: v for v in assemble(vector(bodies["table"]), answers, {})[0]}
    dgx, h200 = views["node-dgx"].busiest_port, views["node-h200"].busiest_port
    assert dgx is not None and dgx.label == "enp225s0f0" and dgx.kind == "ethernet"  # the dataset share's reads
    assert dgx.busiest > 1e6 and dgx.line_ratio is not None and dgx.line_ratio < 0.01
    assert h200 is not None and h200.kind == "infiniband" and len(views["node-h200"].ports) == 8
