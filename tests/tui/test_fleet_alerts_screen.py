"""The fleet opens on what fired: through Prometheus, when an alert fires at start the alerts screen comes first,
firing before pending, with host, job and rank; the selected alert's commands below; enter opens the job's ranks
(an alert that names a job) or the host (one that does not: matched by name, or by the target it came from);
escape goes back. Without one firing it stays on the hosts (`a` or --alerts open the list); exporters read
directly have no alerts. Labels and annotations from outside stay literal."""

from __future__ import annotations

import json
import urllib.parse

import pytest
from textual.pilot import Pilot

from hwtop.fleet.sources import DirectSource, PrometheusSource
from hwtop.tui.fleet.alerts_screen import FleetAlertsScreen, age
from hwtop.tui.fleet.app import FleetApp
from hwtop.tui.fleet.host_screen import FleetHostScreen
from hwtop.tui.fleet.job_screen import FleetJobScreen
from tests.fleet.test_job import URL, FakePrometheus, finding, rank_series
from tests.waiting import pilot_until

EVIL = "[@click=app.quit]x\x1b]0;y\x07"


def alert(name: str, state: str, severity: str, active: str, annotations: dict[str, str] | None = None,
          **labels: str) -> dict:
    return {"labels": {"alertname": name, "severity": severity, **labels}, "state": state, "activeAt": active,
            "annotations": annotations or {"summary": f"{name} on {labels.get('Hostname', '?')}"}, "value": "1e+00"}


HANG = alert("HwtopJobHung", "firing", "critical", "2026-12-06T20:01:00Z",
             {"summary": "Job bert is hung on node-2: rank 3 is the one the others wait for",
              "hwtop_fleet": "hwtop fleet --prometheus http://prom:9090 --job 'bert'"},
             job_name="bert", rank="3", Hostname="node-2")
XID = alert("GpuXidError", "firing", "critical", "2026-12-06T20:00:00Z",
            {"summary": "GPU 1 on node-1 reported Xid 79", "hwtop_on_host": "hwtop doctor --job 'slurm:4242'"},
            Hostname="node-1", gpu="1", hpc_job="4242")
DOWN = alert("HwtopExporterDown", "firing", "warning", "2026-12-06T19:00:00Z", job="hwtop", instance="node-0:1")
LATER = alert("HwtopJobStraggler", "pending", "warning", "2026-12-06T20:02:00Z", job_name="train", rank="1",
              Hostname="node-1")
HOSTILE = alert(EVIL, "firing", "info", "2026-12-06T20:03:00Z", {"summary": EVIL}, Hostname=EVIL)


class WithAlerts:
    """The jobs' fake Prometheus, and /api/v1/alerts answering `alerts`."""

    def __init__(self, alerts: list[dict]) -> None:
        table = [finding("node-0", "io-bound", "warning"), finding("node-1", "gpu-throttled", "warning", "GPU1"),
                 finding("node-2", "collective-hang", "critical", "job")]
        ranks = [rank_series("node-2", 2, 29.5, 0.5, job="bert"), rank_series("node-2", 3, 0.0, 30.0, job="bert")]
        self.jobs = FakePrometheus(table, ranks)
        self.alerts = alerts

    def __call__(self, url: str, timeout: float, limit: int) -> bytes:
        if urllib.parse.urlsplit(url).path == "/api/v1/alerts":
            return json.dumps({"status": "success", "data": {"alerts": self.alerts}}).encode()
        return self.jobs(url, timeout, limit)


def app_over(served: list[dict], **options: bool) -> FleetApp:
    return FleetApp(PrometheusSource(URL, "", interval=0.2, timeout=2.0, getter=WithAlerts(served),
                                     job_window_s=30), **options)


async def until(pilot: Pilot, ready) -> None:  # noqa: ANN001 - a no-argument predicate
    await pilot_until(pilot, ready)


def rows(screen: FleetAlertsScreen) -> list[list[str]]:
    return [[cell.plain for cell in screen.table.get_row_at(i)] for i in range(screen.table.row_count)]


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_it_opens_on_the_firing_alerts_and_enter_opens_the_job_or_the_host():
    app = app_over([LATER, DOWN, HANG, XID])
    async with app.run_test(size=(140, 30)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, FleetAlertsScreen) and app.screen.table.row_count == 4)
        screen = app.screen
        assert isinstance(screen, FleetAlertsScreen)
        listed = rows(screen)
        assert [row[:6] for row in listed] == [
            ["CRIT", "GpuXidError", "node-1", "", "", "1"], ["CRIT", "HwtopJobHung", "node-2", "bert", "3", ""],
            ["WARN", "HwtopExporterDown", "node-0", "", "", ""],
            ["pending", "HwtopJobStraggler", "node-1", "train", "1", ""]], listed
        assert "3 firing, 1 pending, firing first" in str(screen.title_bar.render())
        detail = str(screen.detail.render())
        assert "on node-1: hwtop doctor --job 'slurm:4242'" in detail and "enter: host node-1" in detail, detail
        await pilot.press("down")
        detail = str(screen.detail.render())
        assert "from here: hwtop fleet --prometheus http://prom:9090 --job 'bert'" in detail, detail
        await pilot.press("enter")
        job = app.screen
        assert isinstance(job, FleetJobScreen) and job.job == "bert"  # its ranks: tests/tui/test_fleet_job_screen.py
        await pilot.press("escape")
        assert app.screen is screen
        await pilot.press("up", "enter")
        host = app.screen
        assert isinstance(host, FleetHostScreen) and host.host == "node-1"
        await pilot.press("escape", "down", "down", "enter")  # the exporter that is down: its target's host
        host = app.screen
        assert isinstance(host, FleetHostScreen) and host.host == "node-0", app.screen
        await pilot.press("escape", "escape")
        assert app.screen is app.hosts_screen
        await pilot.press("q")


async def test_without_a_firing_alert_it_stays_on_the_hosts_and_a_opens_the_list():
    app = app_over([LATER])
    async with app.run_test(size=(120, 24)) as pilot:
        await until(pilot, lambda: app.frame.alerts is not None and app.hosts_screen.table.row_count == 3)
        assert app.alerts_seen and app.screen is app.hosts_screen  # the first list came: it is not opened later
        await pilot.press("a")
        screen = app.screen
        assert isinstance(screen, FleetAlertsScreen)
        await until(pilot, lambda: screen.table.row_count == 1)
        assert rows(screen)[0][:2] == ["pending", "HwtopJobStraggler"]
        await pilot.press("q")


async def test_alerts_opens_on_the_list_even_when_none_fires():
    app = app_over([], alerts=True)
    async with app.run_test(size=(120, 24)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, FleetAlertsScreen))
        screen = app.screen
        assert isinstance(screen, FleetAlertsScreen)
        await until(pilot, lambda: "no alert firing or pending" in str(screen.message.render()))
        await pilot.press("enter")  # nothing to open
        assert app.screen is screen
        await pilot.press("q")


async def test_hostile_labels_stay_literal_and_a_host_outside_the_fleet_is_said():
    app = app_over([HOSTILE])
    async with app.run_test(size=(140, 24)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, FleetAlertsScreen) and app.screen.table.row_count == 1)
        screen = app.screen
        assert isinstance(screen, FleetAlertsScreen)
        row = rows(screen)[0]
        assert row[1] == row[2] == "[@click=app.quit]x␛]0;y␇", row  # control characters made visible
        await pilot.press("enter")
        assert app.screen is screen and app.is_running  # no such host: a notice, not a quit
        await pilot.press("q")


async def test_exporters_read_directly_have_no_alerts():
    app = FleetApp(DirectSource(["127.0.0.1:1"], interval=1.0, timeout=0.5))
    async with app.run_test(size=(100, 24)) as pilot:
        await pilot.press("a")
        assert app.screen is app.hosts_screen
        await pilot.press("q")


def test_age_reads_at_a_glance():
    assert [age(s) for s in (None, -3, 45, 720, 3 * 3600 + 300, 2 * 86400 + 4 * 3600)] == ["-", "0s", "45s", "12m",
                                                                                           "3h05m", "2d04h"]
