"""Prometheus's alerts as the fleet reads them (fleet/alerts.py): the answer a real Prometheus 2.42 gave once
deploy/hwtop-alerts.yml fired on the nccl-hang demo (tests/fixtures/prometheus/alerts-nccl-hang.json, recorded by
`python -m tests.deploy.alerts_rig`), firing before pending and by severity, the host, job, rank and owner from
their labels, bounded and typed against a hostile answer; read each round through Prometheus, without making the
round a partial one when it fails; `hwtop fleet --prometheus URL --alerts --json` prints them."""

from __future__ import annotations

import json
import urllib.parse
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hwtop.fleet.alerts import ALERTS, MAX_ALERTS, MAX_TEXT, AlertList, parse_alerts, read_alerts
from hwtop.fleet.http import FetchError
from hwtop.fleet.sources import Ask, PrometheusSource

ROOT = Path(__file__).resolve().parents[2]
RECORDED = json.loads((ROOT / "tests" / "fixtures" / "prometheus" / "alerts-nccl-hang.json").read_text())
EMPTY_VECTOR = b'{"status":"success","data":{"resultType":"vector","result":[]}}'
EMPTY_MATRIX = b'{"status":"success","data":{"resultType":"matrix","result":[]}}'


def answer(*alerts: dict) -> bytes:
    return json.dumps({"status": "success", "data": {"alerts": list(alerts)}}).encode()


def alert(name: str, state: str = "firing", severity: str = "warning", active: str = "2026-12-06T20:00:00Z",
          **labels: str) -> dict:
    return {"labels": {"alertname": name, "severity": severity, **labels}, "annotations": {"summary": f"{name}!"},
            "state": state, "activeAt": active, "value": "1e+00"}


def test_the_recorded_hang_alert_names_its_host_job_rank_and_commands():
    (row,) = parse_alerts(json.dumps(RECORDED["body"]).encode()).alerts
    assert (row.name, row.state, row.severity, row.host, row.rank) == ("HwtopJobHung", "firing", "critical",
                                                                       "node-hang", "5")
    assert row.job.startswith("pid ") and row.summary == f"Job {row.job} is hung on node-hang: rank 5 is the one the " \
        "others wait for"
    assert row.fleet_command.startswith("hwtop fleet --prometheus http://127.0.0.1:") and \
        row.fleet_command.endswith(f" --job '{row.job}'")
    stamp = RECORDED["body"]["data"]["alerts"][0]["activeAt"]  # nanoseconds, as Prometheus writes them
    assert row.since is not None and abs(row.since - _unix(stamp)) < 1e-3
    as_json = row.to_dict(row.since + 12.34)
    assert as_json["active_s"] == 12.3 and as_json["labels"]["alertname"] == "HwtopJobHung"


def _unix(stamp: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(stamp[:26] + "+00:00").timestamp()


def test_firing_before_pending_then_by_severity_then_the_oldest_first():
    rows = parse_alerts(answer(
        alert("PendingCrit", "pending", "critical", "2026-12-06T19:00:00Z", Hostname="a"),
        alert("NewCrit", "firing", "critical", "2026-12-06T20:05:00Z", Hostname="b"),
        alert("Info", "firing", "info", "2026-12-06T18:00:00Z", Hostname="c"),
        alert("OldCrit", "firing", "critical", "2026-12-06T20:01:00.5Z", Hostname="d"),
        alert("Page", "firing", "page", "2026-12-06T17:00:00Z", Hostname="e"),
        alert("Warn", "firing", "warning", "2026-12-06T17:30:00Z", Hostname="f"),
    )).alerts
    assert [r.name for r in rows] == ["OldCrit", "NewCrit", "Warn", "Info", "Page", "PendingCrit"]


def test_host_job_rank_and_owner_come_from_either_exporter_s_labels():
    rows = parse_alerts(answer(
        alert("A", hostname="node-b", gpu="3", hpc_job="4242"),  # dcgm-exporter's newer spelling
        alert("B", instance="node-c.example.com:9400", pod="train-0", namespace="ml"),  # only the target
        alert("C", Hostname="node-a", job_name="bert", rank="7"),
    )).alerts
    by_name = {r.name: r for r in rows}
    assert (by_name["A"].host, by_name["A"].gpu, by_name["A"].owner) == ("node-b", "3", "4242")
    assert (by_name["B"].host, by_name["B"].instance, by_name["B"].owner) == ("node-c.example.com",
                                                                              "node-c.example.com:9400", "ml/train-0")
    assert (by_name["C"].host, by_name["C"].job, by_name["C"].rank) == ("node-a", "bert", "7")


def test_a_huge_answer_is_cut_and_counted():
    rows = parse_alerts(answer(*(alert(f"A{i:05d}", Hostname="x" * (MAX_TEXT + 100)) for i in range(MAX_ALERTS + 7))))
    assert (len(rows.alerts), rows.left_out) == (MAX_ALERTS, 7)
    assert len(rows.alerts[0].host) == MAX_TEXT and rows.alerts[0].host.endswith("…")


@pytest.mark.parametrize(("body", "said"), [
    (b"<html>bad gateway</html>", "not a Prometheus alerts answer"),
    (b'{"status":"error","errorType":"bad_data","error":"unknown endpoint"}', "Prometheus: unknown endpoint"),
    (EMPTY_VECTOR, "not a Prometheus alerts answer"),  # an instant query's answer, not the alerts'
    (b'{"status":"success","data":{"alerts":[{"labels":{"a":1}}]}}', "not a Prometheus alerts answer"),
])
def test_what_is_not_an_alerts_answer_is_a_one_line_error(body: bytes, said: str):
    with pytest.raises(FetchError, match=said) as error:
        parse_alerts(body)
    assert "\n" not in str(error.value)


def test_an_unreadable_time_is_no_time_not_an_error():
    (row,) = parse_alerts(answer(alert("A", active="yesterday"))).alerts
    assert row.since is None and row.to_dict(0.0)["active_s"] is None


@settings(max_examples=40, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                                 max_size=4), max_leaves=20))
def test_any_json_is_alerts_or_a_fetch_error(value: object):
    body = json.dumps({"status": "success", "data": {"alerts": value}}).encode()
    try:
        listed = parse_alerts(body)
    except FetchError:
        return
    assert isinstance(listed, AlertList)


def test_a_round_reads_the_alerts_and_their_failure_is_the_list_s_own_message():
    asked: list[str] = []

    def getter(url: str, timeout: float, limit: int) -> bytes:
        path = urllib.parse.urlsplit(url).path
        asked.append(path)
        if path == "/api/v1/alerts":
            raise FetchError("HTTP 404")
        return EMPTY_MATRIX if path.endswith("query_range") else EMPTY_VECTOR

    source = PrometheusSource("http://prom:9090", getter=getter)
    try:
        got = source.read(Ask())
    finally:
        source.close()
    assert "/api/v1/alerts" in asked
    assert got.problem is None and got.alerts == AlertList(message="Prometheus alerts: HTTP 404")
    assert read_alerts({}, {}) is None and read_alerts({ALERTS: answer()}, {}) == AlertList()


def test_fleet_alerts_json_prints_them_firing_first(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture):
    pending = answer(*RECORDED["body"]["data"]["alerts"], alert("Later", "pending", "critical", Hostname="z"))
    bodies = {"/api/v1/alerts": pending}
    bodies["/api/v1/query_range"] = EMPTY_MATRIX
    monkeypatch.setattr("hwtop.fleet.sources.get", lambda url, timeout, limit, accept:
                        bodies.get(urllib.parse.urlsplit(url).path, EMPTY_VECTOR))
    from hwtop.cli.main import main

    assert main(["fleet", "--prometheus", "http://prom:9090", "--alerts", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert [(a["alert"], a["state"]) for a in printed["alerts"]] == [("HwtopJobHung", "firing"), ("Later", "pending")]
    assert (printed["firing"], printed["pending"], printed["message"]) == (1, 1, None)
    assert printed["alerts"][0]["host"] == "node-hang" and printed["alerts"][0]["rank"] == "5"
    bodies["/api/v1/alerts"] = b'{"status":"error","error":"no rule manager"}'
    assert main(["fleet", "--prometheus", "http://prom:9090", "--alerts", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["message"] == "Prometheus alerts: Prometheus: no rule manager"


def test_alerts_needs_prometheus(capsys: pytest.CaptureFixture):
    from hwtop.cli.main import main

    with pytest.raises(SystemExit) as leaving:
        main(["fleet", "127.0.0.1:9400", "--alerts"])
    err = capsys.readouterr().err
    assert leaving.value.code == 2 and err.count("\n") == 1 and "--prometheus" in err, err
