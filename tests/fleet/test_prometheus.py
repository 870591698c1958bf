"""`hwtop fleet --prometheus`: the fleet through Prometheus' HTTP API. The fast suite replays answers recorded
from a real Prometheus 2.42 (tests/fixtures/prometheus, rerecorded with `python -m tests.prometheus_rig`); the
slow tests run the real server against two hwtop exporters. NVIDIA's DCGM dashboard (its queries, a fixture) gets
a series for every panel from an hwtop exporter on a GPM-capable demo; so does ours (deploy/)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from hwtop.fleet.frame import FleetFrame
from hwtop.fleet.http import FetchError
from hwtop.fleet.session import FleetSession
from hwtop.fleet.sources import PrometheusSource
from hwtop.tui.fleet_app import FleetApp
from tests.exporter.test_exporter import StaticExporter, scrape
from tests.prometheus_rig import PROMETHEUS, HwtopFleet

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
DASHBOARD = json.loads((FIXTURES / "dcgm-dashboard-queries.json").read_text())
OURS = json.loads((ROOT / "deploy" / "grafana-dashboard.json").read_text())
MIB_PER_GIB = 1024


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Replay:
    """A getter answering the fleet's queries from a recording; a query that is not the recorded one fails the
    test (the queries changed: rerecord)."""

    def __init__(self, name: str) -> None:
        self.recording = json.loads((FIXTURES / "prometheus" / f"{name}.json").read_text())
        self.asked: list[str] = []

    def __call__(self, url: str, timeout: float, limit: int) -> bytes:
        parts = urllib.parse.urlsplit(url)
        promql = dict(urllib.parse.parse_qsl(parts.query)).get("query", "")
        for key, answer in self.recording["answers"].items():
            if answer["path"] == parts.path and answer["query"] == promql:
                self.asked.append(key)
                return json.dumps(answer["body"]).encode()
        raise AssertionError(f"not a recorded query: {parts.path} {promql!r} "
                             "(rerecord: python -m tests.prometheus_rig)")


def run_rounds(session: FleetSession, clock: Clock, rounds: int = 1) -> FleetFrame:
    """Rounds as the session's worker runs them, each request answered on the source's own threads."""
    for _ in range(rounds):
        session.round()
        clock.now += session.source.interval
    return session.frame


def replayed(name: str, matchers: str, host: str | None = None) -> tuple[FleetSession, Replay]:
    """`host`: that host's screen open (the recordings hold its own GPU fields' query)."""
    replay = Replay(name)
    source = PrometheusSource("http://prometheus:9090", matchers, interval=2.0, timeout=3.0, getter=replay,
                              wall=lambda: replay.recording["now"])
    session = FleetSession(source)
    session.ask(None, False, host)
    session.round()
    session.round()  # the second round also asks /api/v1/targets: a target was down
    return session, replay


def test_recorded_hwtop_fleet_two_hosts_a_dead_target_and_right_totals():
    session, replay = replayed("hwtop-two-hosts", 'job="train"', "node-h200")
    frame = session.frame
    try:
        assert "targets" in replay.asked and frame.problem is None and frame.warnings == ()
        hosts = {v.name: v for v in frame.hosts}
        assert sorted(hosts) == ["127.0.0.1", "node-dgx", "node-h200"]
        dgx, h200, dead = hosts["node-dgx"], hosts["node-h200"], hosts["127.0.0.1"]
        assert dead.error == "down: connection refused" and not dead.gpus
        assert len(dgx.gpus) == 8 and {g.model for g in dgx.gpus} == {"NVIDIA A100-SXM4-80GB"}
        assert len(h200.gpus) == 1 and h200.gpus[0].model == "NVIDIA H200"
        assert dgx.memory is not None and dgx.memory[1] == 8 * 81920  # FB_TOTAL, whole MiB
        answers = replay.recording["answers"]
        recorded = {r["metric"].get("Hostname"): float(r["value"][1])
                    for r in answers["gpu:DCGM_FI_DEV_FB_TOTAL"]["body"]["data"]["result"]}
        assert h200.memory is not None and h200.memory[1] == recorded["node-h200"] == 143771  # as recorded
        assert dgx.hwtop and h200.hwtop and dgx.cpu_busy is not None
        assert 0 < (h200.gpus[0].tensor_active or 0) < 1  # its screen is open: its own fields were asked
        assert h200.gpus[0].temperature is not None and h200.gpus[0].power is not None
        assert all(g.temperature is None and g.power is None for g in dgx.gpus)  # not asked for the fleet
        assert len(dgx.trend) >= 2 and all(0 <= x <= 100 for x in dgx.trend)
        fleet = frame.summary
        assert (fleet.hosts, fleet.up, fleet.gpus, fleet.total_mib) == (3, 2, 9, 8 * 81920 + 143771)
        used = sum(float(r["value"][1]) for r in answers["gpu:DCGM_FI_DEV_FB_USED"]["body"]["data"]["result"])
        assert fleet.used_mib == used
        assert frame.hosts[0].name == "127.0.0.1"  # worst first
    finally:
        session.close()


def test_recorded_dcgm_and_node_exporter_fleet():
    """What most clusters have: dcgm-exporter (one box scraped twice, one with the lower-case label) and
    node-exporter (one dead): one row per box, GPUs once, CPU from node-exporter, no findings column."""
    session, _ = replayed("dcgm-node-exporter", "", "node-b")
    frame = session.frame
    try:
        hosts = {v.name: v for v in frame.hosts}
        assert sorted(hosts) == ["node-a", "node-b", "node-c"]
        a, b, c = hosts["node-a"], hosts["node-b"], hosts["node-c"]
        assert len(a.gpus) == 2 and a.memory == (61440 + 1024, 2 * (61440 + 19520 + 545))  # used+free+reserved
        assert b.memory == (30000, 30000 + 10536)  # an exporter without FB_RESERVED
        assert [g.temperature for g in b.gpus] == [60]  # open: asked by its lower-case `hostname` label
        assert all(g.temperature is None for g in a.gpus)
        assert a.util_mean == (97 + 12) / 2 and b.util_mean == 55
        assert a.cpu_busy == pytest.approx(25, abs=3) and b.cpu_busy == pytest.approx(60, abs=3)
        assert not a.hwtop and not a.findings
        assert c.error == "down: connection refused" and c.address == "node-c/node-c:9100"
        assert frame.warnings == ("node-a: the same GPUs come from 2 targets (dcgm-a/node-a:9400, "
                                  "dcgm-again/node-a.example.com:9400); counted once",)
        fleet = frame.summary
        assert (fleet.gpus, fleet.used_mib, fleet.total_mib) == (3, 92464.0, 163010.0 + 40536.0)
    finally:
        session.close()


async def test_the_view_from_recorded_answers():
    session, _ = replayed("hwtop-two-hosts", 'job="train"')
    app = FleetApp(session.source)
    async with app.run_test(size=(170, 20)) as pilot:
        screen = app.hosts_screen
        while screen.table.row_count < 3:
            await pilot.pause(0.05)
        title = str(screen.title_bar.render())
        assert 'Prometheus http://prometheus:9090 {job="train"}' in title
        summary = str(screen.summary.render())
        assert "2/3 up · 1 down · 9 GPUs" in summary and "/780 GiB" in summary, summary
        rows = [[str(getattr(c, "plain", c)) for c in screen.table.get_row_at(i)]
                for i in range(screen.table.row_count)]
        assert [r[0] for r in rows] == ["127.0.0.1", "node-dgx", "node-h200"]
        assert rows[0][1] == "down: connection refused" and rows[1][2] == "8" and rows[2][2] == "1"
        assert rows[1][10] == "8x A100-SXM4-80GB" and rows[2][10] == "1x H200"  # the GPU models, counted
        assert rows[1][7] == "no problems seen" or rows[1][7].split()[0] in ("CRITICAL", "WARNING", "INFO")
        assert re.fullmatch(r"127\.0\.0\.1:\d+", rows[1][9])  # the instance it was scraped from
        assert rows[1][8].startswith("enp225s0f0 ") and rows[2][8].startswith("mlx5_")  # the busiest ports
        await pilot.press("q")


def test_prometheus_down_slow_or_wrong_is_a_line_not_a_crash():
    clock = Clock()
    good = Replay("hwtop-two-hosts")
    answer: list[object] = [FetchError("unreachable: Connection refused")]

    def getter(url: str, timeout: float, limit: int) -> bytes:
        if isinstance(answer[0], Exception):
            raise answer[0]
        return _replay_any(good, url) if answer[0] is good else answer[0]  # type: ignore[return-value]

    source = PrometheusSource("http://p:9090", "", interval=1.0, timeout=3.0, getter=getter, wall=lambda: 1.8e9)
    session = FleetSession(source, clock=clock)
    try:
        frame = run_rounds(session, clock)
        assert frame.problem == "unreachable: Connection refused" and frame.hosts == ()
        answer[0] = good
        frame = run_rounds(session, clock)
        assert frame.problem is None and len(frame.hosts) == 3
        answer[0] = b'{"status":"error","errorType":"bad_data","error":"1:5: parse error: unexpected \\"}\\""}'
        clock.now += 7
        frame = run_rounds(session, clock)
        problem = frame.problem or ""
        assert problem == 'Prometheus: 1:5: parse error: unexpected "}"; showing what it said 8 s ago', problem
        assert len(frame.hosts) == 3 and frame.stale_s == 8  # the last answer stays on screen, its age said
        for body in (b"<html>502 Bad Gateway</html>", b'{"status":"success","data":{"resultType":"matrix"}}',
                     b'{"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":1},"value":[1,"x"]}]}}',
                     b"[" * 100000):
            answer[0] = body
            frame = run_rounds(session, clock)
            problem = frame.problem or ""
            assert problem and "\n" not in problem and len(frame.hosts) == 3, (body[:40], problem)
    finally:
        session.close()


def _replay_any(replay: Replay, url: str) -> bytes:
    """The recording's answer to whichever of its queries `url` asks, whatever the selector."""
    parts = urllib.parse.urlsplit(url)
    promql = dict(urllib.parse.parse_qsl(parts.query)).get("query", "")
    for answer in replay.recording["answers"].values():
        if answer["path"] == parts.path and answer["query"].replace(', job="train"', "").replace('{job="train"}', "") \
                == promql:
            return json.dumps(answer["body"]).encode()
    raise AssertionError(promql)


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_a_prometheus_that_never_answers_ends_the_round_at_its_deadline():
    """A request stuck past its deadline (the getter ignores it) does not hold the round: the round ends at the
    deadline and says so; the request ends on its own thread."""
    release = threading.Event()

    def getter(url: str, timeout: float, limit: int) -> bytes:
        release.wait(30)
        raise FetchError("late")

    session = FleetSession(PrometheusSource("http://p:9090", "", interval=1.0, timeout=0.2, getter=getter))
    try:
        assert session.round().problem == "no answer within 0.2 s"
    finally:
        release.set()
        session.close()


# ----- NVIDIA's DCGM dashboard, and ours -----

_SELECTOR = re.compile(r"([A-Za-z_:][A-Za-z0-9_:]*)\s*\{([^}]*)\}")
_MATCHER = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*,?')


def grafana_all(expr: str) -> str:
    """Grafana's 'All' for every variable, and its rate interval."""
    return re.sub(r"\$\{?(instance|gpu|Hostname)\}?", ".*", expr).replace("$__rate_interval", "1m")


def selected(expr: str, samples: list[tuple[str, dict[str, str]]]) -> list[dict[str, str]]:
    """A PromQL subset, honest for these dashboards: every expression there is functions, aggregations and
    arithmetic over one vector selector `name{matchers}`, and is non-empty exactly when that selector matches a
    series. This evaluates the selector (=, !=, =~, !~; an absent label is the empty string, as in PromQL)."""
    found = _SELECTOR.findall(grafana_all(expr))
    assert len(found) == 1, f"not a one-selector expression: {expr}"
    name, body = found[0]
    matchers = _MATCHER.findall(body)
    assert "".join(m.group(0) for m in _MATCHER.finditer(body)).replace(" ", "") == body.replace(" ", "")

    def ok(labels: dict[str, str]) -> bool:
        for label, op, value in matchers:
            have = labels.get(label, "")
            hit = re.fullmatch(value, have) is not None if op in ("=~", "!~") else have == value
            if hit != (op in ("=", "=~")):
                return False
        return True

    return [labels for sample_name, labels in samples if sample_name == name and ok(labels)]


def exporter_samples(text: str, port: int) -> list[tuple[str, dict[str, str]]]:
    """The page's series with the target labels a scrape adds."""
    return [(f.name, {**s.labels, "instance": f"127.0.0.1:{port}", "job": "hwtop"})
            for f in text_string_to_metric_families(text) for s in f.samples]


def test_every_panel_of_nvidias_dcgm_dashboard_gets_a_series_from_hwtop_on_a_gpm_demo():
    running = StaticExporter("h100-pcie", hostname="node-h100")
    try:
        samples = exporter_samples(scrape(running.url), running.port)
    finally:
        running.close()
    empty = [p["title"] for p in DASHBOARD["panels"] for e in p["exprs"] if not selected(e, samples)]
    assert len(DASHBOARD["panels"]) == 8 and empty == []
    for query in DASHBOARD["variables"].values():  # label_values(METRIC, label): that metric exists
        metric = re.fullmatch(r"label_values\((\w+), \w+\)", query)
        assert metric and any(name == metric.group(1) for name, _ in samples)


# Panels of our dashboard that stay empty on the demo: its steady job raises no finding. The demo's job fills the
# job panels, and its GPUs report XID 0 (none since hwtop started watching).
EMPTY_ON_THE_DEMO = {"What limits the job",
                     "Active findings by severity"}
# ...and the job panels on snapshots of the GPUs alone (tests/factories.py's, which have no job)
JOB_PANELS = {"Job: training steps per second", "Job: share of each step waiting for data"}


def test_our_dashboard_reads_only_series_the_exporter_writes():
    from hwtop.exporter.metrics import DCGM_FIELDS

    running = StaticExporter("h200", hostname="node-h200")
    try:
        text = scrape(running.url)
        samples = exporter_samples(text, running.port)
    finally:
        running.close()
    declared = set(re.findall(r"^# TYPE (\S+) ", text, re.M)) | {f.name for f in DCGM_FIELDS}
    panels = [p for p in OURS["panels"] if p["type"] != "row"]
    for panel in panels:
        for target in panel["targets"]:
            name = _SELECTOR.findall(grafana_all(target["expr"]))[0][0]
            assert name in declared, (panel["title"], name)
    filled = {p["title"] for p in panels if all(selected(t["expr"], samples) for t in p["targets"])}
    assert filled == {p["title"] for p in panels} - EMPTY_ON_THE_DEMO - JOB_PANELS
    assert any(p["title"] == "What limits the job" and "hwtop_finding" in p["targets"][0]["expr"] for p in panels)


# ----- a real Prometheus -----

needs_prometheus = pytest.mark.skipif(PROMETHEUS is None, reason="Debian's prometheus package is not installed "
                                                                 "(.ci/run installs it: apt-get install prometheus)")


def fb_total_mib(fleet: HwtopFleet) -> float:
    """What the exporters themselves say, read directly (not through Prometheus): the sum of DCGM_FI_DEV_FB_TOTAL."""
    return sum(s.value for e in fleet.exporters
               for f in text_string_to_metric_families(scrape(f"http://{e.target}/metrics"))
               if f.name == "DCGM_FI_DEV_FB_TOTAL" for s in f.samples)


@pytest.fixture(scope="module")
def hwtop_fleet():
    fleet = HwtopFleet()
    try:
        fleet.prometheus.wait_for_scrapes(3, scrapes=2)
        yield fleet
    finally:
        fleet.close()


@pytest.mark.slow
@needs_prometheus
def test_fleet_through_a_real_prometheus_shows_both_hosts_with_right_totals(hwtop_fleet):
    session = FleetSession(PrometheusSource(hwtop_fleet.prometheus.url, 'job="train"', interval=1.0, timeout=5.0))
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            frame = session.round()
            hosts = {v.name: v for v in frame.hosts}
            if {"node-dgx", "node-h200"} <= set(hosts) and len(hosts) == 3:
                break
        assert frame.problem is None, frame.problem
        assert len(hosts["node-dgx"].gpus) == 8 and len(hosts["node-h200"].gpus) == 1
        fleet = frame.summary
        assert (fleet.up, fleet.gpus, fleet.total_mib) == (2, 9, fb_total_mib(hwtop_fleet))
        assert "down" in (next(v for v in hosts.values() if not v.up).error or "")
    finally:
        session.close()


@pytest.mark.slow
@needs_prometheus
@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_the_fleet_command_against_a_real_prometheus(hwtop_fleet, tmp_path: Path):
    session, marker = f"hwtop-fleetp-{uuid.uuid4().hex[:8]}", tmp_path / "exit"
    # -u COLUMNS -u LINES: a tmux server started under pytest hands its panes COLUMNS=80, which Textual believes
    command = (f"env -u COLUMNS -u LINES PYTHONPATH={ROOT} {sys.executable} -m hwtop fleet --prometheus "
               f"{hwtop_fleet.prometheus.url} --selector '{{job=\"train\"}}'; echo $? > {marker}; sleep 30")
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "170", "-y", "20", command], check=True)
    try:
        def pane() -> str:
            return subprocess.run(["tmux", "capture-pane", "-p", "-t", session], capture_output=True,
                                  text=True).stdout
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and "node-h200" not in pane():
            time.sleep(0.2)
        screen = pane()
        assert "node-dgx" in screen and "node-h200" in screen, screen
        total = f"/{fb_total_mib(hwtop_fleet) / MIB_PER_GIB:,.0f} GiB"
        assert "2/3 up · 1 down · 9 GPUs" in screen and total in screen, screen
        started = time.monotonic()
        subprocess.run(["tmux", "send-keys", "-t", session, "q"], check=True)
        while time.monotonic() - started < 5 and not marker.exists():
            time.sleep(0.02)
        assert marker.exists() and time.monotonic() - started < 1.0 and marker.read_text().strip() == "0"
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], check=False)


@pytest.mark.slow
@needs_prometheus
def test_both_dashboards_queries_through_a_real_prometheus(hwtop_fleet):
    """NVIDIA's panels each get a series (dgx-a100 and h200: the tensor panel from the H200's GPM); ours all
    parse, and all but the EMPTY_ON_THE_DEMO panels get a series."""
    prometheus = hwtop_fleet.prometheus
    for panel in DASHBOARD["panels"]:
        for expr in panel["exprs"]:
            assert prometheus.query(grafana_all(expr)), panel["title"]
    assert {r["metric"]["instance"] for r in prometheus.query("group by (instance) (DCGM_FI_DEV_GPU_TEMP)")} == \
        {e.target for e in hwtop_fleet.exporters}
    tensor = prometheus.query(grafana_all(DASHBOARD["panels"][7]["exprs"][0]))
    assert {r["metric"]["Hostname"] for r in tensor} == {"node-h200"}  # only the GPM card has it
    for panel in (p for p in OURS["panels"] if p["type"] != "row"):
        results = [prometheus.query(grafana_all(t["expr"])) for t in panel["targets"]]  # each parses
        assert all(results) == (panel["title"] not in EMPTY_ON_THE_DEMO), panel["title"]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool (Debian's prometheus package) is missing")
def test_the_shipped_scrape_config_is_valid():
    result = subprocess.run(["promtool", "check", "config", str(ROOT / "deploy" / "prometheus.yml")],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
