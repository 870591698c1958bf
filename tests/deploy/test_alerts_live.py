"""The shipped alerting rules in a real Prometheus (Debian's), scraping `hwtop export --demo dgx-a100 --scenario
nccl-hang` every second: HwtopJobHung fires with its host and the rank the others wait for within a few
evaluations of the exporter's collective-hang finding; its annotation's command opens the job and the fleet judges
it a hang; `hwtop fleet --prometheus URL --alerts --json` lists it first; the fleet's screen opens on it and
`enter` opens the job's ranks."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
from datetime import datetime

import pytest

from hwtop.fleet.sources import PrometheusSource
from hwtop.tui.fleet.alerts_screen import FleetAlertsScreen
from hwtop.tui.fleet.app import FleetApp
from hwtop.tui.fleet.job_screen import FleetJobScreen
from tests.deploy.alerts_rig import HOST, HangRig
from tests.prometheus_rig import PROMETHEUS, ROOT

HWTOP = [sys.executable, "-m", "hwtop"]
EVALUATIONS = 3  # of one second each (tests/prometheus_rig.py): "within a few scrapes"


@pytest.fixture(scope="module")
def rig():
    if PROMETHEUS is None:
        pytest.skip("Debian's prometheus package is not installed")
    hang = HangRig()
    try:
        yield hang
    finally:
        hang.close()


def first_sample(rig: HangRig, selector: str, since: float) -> float:
    """Time of the first sample of `selector` since `since`: the smallest of its samples' own timestamps."""
    time.sleep(2)  # a range's last step must come after the sample
    matrix = rig.query_range(f"timestamp({selector})", since, time.time(), 0.5)
    return min(float(point[1]) for series in matrix for point in series["values"])


def fleet(*args: str) -> dict:
    done = subprocess.run([*HWTOP, "fleet", *args, "--json"], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


@pytest.mark.slow
def test_the_hang_alert_fires_with_its_host_and_its_command_opens_the_hung_job(rig: HangRig):
    started = time.time()
    alert = rig.wait_for("HwtopJobHung")
    labels = alert["labels"]
    assert (labels["Hostname"], labels["severity"], labels["rank"]) == (HOST, "critical", "5"), labels  # the story's
    job = labels["job_name"]
    assert job.startswith("pid "), labels  # the demo's job, named as hwtop export names a job without --job-name
    found = first_sample(rig, 'hwtop_finding{rule="collective-hang"}', started - 5)
    active = datetime.fromisoformat(alert["activeAt"][:26] + "+00:00").timestamp()
    assert 0 <= active - found <= EVALUATIONS, (found, alert["activeAt"])
    command = alert["annotations"]["hwtop_fleet"]
    assert command == f"hwtop fleet --prometheus {rig.prometheus.url} --job '{job}'"
    argv = shlex.split(command)
    assert argv[:2] == ["hwtop", "fleet"]
    deadline = time.monotonic() + 60
    while True:  # the annotation's own words, through the real CLI, until its 15 s window spans the hang
        opened = fleet(*argv[2:], "--rank-window", "15")["job"]
        assert opened["job"] == job and len(opened["ranks"]) == 16, opened  # both nodes' ranks (NCCL's RAS)
        if (opened["verdict"] or {}).get("kind") == "hang" or time.monotonic() > deadline:  # straggler, on the way
            break
        time.sleep(2)
    assert opened["verdict"] is not None, opened["message"]
    assert (opened["verdict"]["kind"], opened["verdict"]["rank"], opened["verdict"]["host"]) == ("hang", 5, HOST)


@pytest.mark.slow
async def test_the_fleet_lists_the_hang_first_and_opens_its_job(rig: HangRig):
    rig.wait_for("HwtopJobHung")
    listed = fleet("--prometheus", rig.prometheus.url, "--alerts")
    first = listed["alerts"][0]
    assert (first["alert"], first["state"], first["host"], first["rank"]) == ("HwtopJobHung", "firing", HOST, "5")
    assert listed["firing"] >= 1 and listed["problem"] is None and listed["message"] is None
    assert first["hwtop_fleet"].endswith(f"--job '{first['job']}'")
    source = PrometheusSource(rig.prometheus.url, interval=1.0, timeout=5.0, job_window_s=15)
    app = FleetApp(source)
    async with app.run_test(size=(140, 30)) as pilot:
        for _ in range(200):  # it opens on the alerts by itself: one fires
            await pilot.pause(0.05)
            if isinstance(app.screen, FleetAlertsScreen) and app.screen.table.row_count:
                break
        screen = app.screen
        assert isinstance(screen, FleetAlertsScreen), app.screen
        row = [cell.plain for cell in screen.table.get_row_at(0)]
        assert row[:5] == ["CRIT", "HwtopJobHung", HOST, first["job"], "5"], row
        await pilot.press("enter")
        ranks = app.screen
        assert isinstance(ranks, FleetJobScreen) and ranks.job == first["job"]
        for _ in range(300):  # the job's own queries answer
            await pilot.pause(0.05)
            if ranks.view.verdict is not None:
                break
        assert ranks.view.verdict is not None and ranks.view.verdict.kind == "hang", ranks.view.message
        await pilot.press("q")
