"""The fleet screen through Prometheus without --job: `j` lists the jobs Prometheus holds (hangs and stragglers
first, with their ranks and hosts), enter opens a job's ranks (the same view as `--job NAME`), escape goes back to
the list, then to the hosts; job names from outside stay literal; a Prometheus without job series says so."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from textual.pilot import Pilot

from hwtop.fleet.sources import PrometheusSource
from hwtop.tui.fleet.app import FleetApp
from hwtop.tui.fleet.job_screen import FleetJobScreen as JobScreen
from hwtop.tui.fleet.jobs_screen import FleetJobsScreen as JobListScreen
from tests.fleet.test_job import URL, FakePrometheus, finding, rank_series
from tests.fleet.test_jobs import three_jobs


def source(prometheus: FakePrometheus) -> PrometheusSource:
    return PrometheusSource(URL, "", interval=0.2, timeout=2.0, getter=prometheus, job_window_s=30)


async def until(pilot: Pilot, ready) -> None:  # noqa: ANN001 - a no-argument predicate
    for _ in range(100):
        await pilot.pause(0.05)
        if ready():
            return
    raise AssertionError("the screen never showed it")


def cells(screen: JobListScreen) -> list[list[str]]:
    return [[cell.plain for cell in screen.table.get_row_at(i)] for i in range(screen.table.row_count)]


async def open_list(app: FleetApp, pilot: Pilot, ready: Callable[[JobListScreen], bool]) -> JobListScreen:
    """`j`, then the list screen once `ready` says it shows what the test waits for."""
    await pilot.press("j")
    listing = app.screen
    assert isinstance(listing, JobListScreen)
    await until(pilot, lambda: ready(listing))
    return listing


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_j_lists_the_jobs_enter_opens_one_escape_goes_back():
    prometheus = three_jobs()
    app = FleetApp(source(prometheus))
    async with app.run_test(size=(120, 24)) as pilot:
        listing = await open_list(app, pilot, lambda listing: listing.table.row_count == 4)
        rows = cells(listing)
        assert rows[0] == ["bert", "HANG rank 3 on node-2 (pid 103)", "2", "1: node-2"], rows
        assert rows[1] == ["train", "STRAGGLER rank 1 on node-1 (pid 101)", "2", "2: node-0, node-1"], rows
        assert rows[2][:3] == ["eval", "no straggler", "2"] and rows[3][:3] == ["idle",
                                                                                 "its exporters read no rank figures "
                                                                                 "yet", "0"], rows
        assert "4 jobs with hwtop rank series" in str(listing.title_bar.render())
        await pilot.press("down", "enter")
        job = app.screen
        assert isinstance(job, JobScreen) and job.job == "train"
        assert "STRAGGLER rank 1 on node-1 (pid 101)" in str(job.verdict.render())  # the list's view, at once
        prometheus.asked.clear()
        await until(pilot, lambda: any('job_name="train"' in q for q in prometheus.asked)
                    and app.frame.job is not None)
        verdict = str(job.verdict.render())
        assert "STRAGGLER rank 1 on node-1 (pid 101)" in verdict and "gpu-throttled · GPU3" in verdict, verdict
        assert job.table.get_row_at(0)[0].plain.strip() == "▶ 1"
        await pilot.press("escape")
        assert app.screen is listing
        await until(pilot, lambda: app.frame.job is None)  # a round that began after escape
        prometheus.asked.clear()
        await until(pilot, lambda: len(prometheus.asked) > 8)
        assert not any('job_name="train"' in q for q in prometheus.asked), "the closed job is still asked"
        await pilot.press("escape")
        assert not isinstance(app.screen, JobListScreen | JobScreen) and app.hosts_screen.table.row_count > 0
        await pilot.press("q")


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_a_hostile_job_name_is_shown_literally():
    evil = "[@click=app.quit]x\x1b]0;y\x07"
    prometheus = FakePrometheus([], [rank_series("node-0", 0, 15.0, 15.0, job=evil),
                                     rank_series("node-1", 1, 15.0, 15.0, job=evil)])
    app = FleetApp(source(prometheus))
    async with app.run_test(size=(80, 24)) as pilot:
        listing = await open_list(app, pilot, lambda listing: listing.table.row_count == 1)
        assert cells(listing)[0][0] == "[@click=app.quit]x␛]0;y␇"
        await pilot.press("enter")
        assert isinstance(app.screen, JobScreen) and app.screen.job == evil
        assert "[@click=app.quit]x␛]0;y␇" in str(app.screen.title_bar.render())
        await pilot.press("escape", "escape", "q")


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_a_prometheus_without_job_series_says_so_in_one_line():
    app = FleetApp(source(FakePrometheus([finding("node-0", "io-bound", "warning")], [])))
    async with app.run_test(size=(80, 24)) as pilot:
        listing = await open_list(app, pilot, lambda listing: "no hwtop job series" in str(listing.message.render()))
        assert str(listing.message.render()) == "no hwtop job series at http://prom:9090"
        assert listing.table.row_count == 0
        await pilot.press("enter")  # nothing to open
        assert app.screen is listing
        await pilot.press("escape", "q")



@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_the_selected_job_stays_selected_when_the_rows_move():
    prometheus = three_jobs()
    app = FleetApp(source(prometheus))
    async with app.run_test(size=(120, 24)) as pilot:
        listing = await open_list(app, pilot, lambda listing: listing.table.row_count == 4)
        await pilot.press("down", "down")
        assert cells(listing)[listing.table.cursor_row][0] == "eval"
        prometheus.ranks = [r for r in prometheus.ranks if r["now"][0]["metric"]["job_name"] != "bert"]
        await until(pilot, lambda: listing.table.row_count == 3)
        assert cells(listing)[listing.table.cursor_row][0] == "eval"
        await pilot.press("enter")
        assert isinstance(app.screen, JobScreen) and app.screen.job == "eval"
        await pilot.press("escape", "escape", "q")
