"""The fleet screen with --job: it opens on the job's ranks (the verdict, the likely cause, a row per rank worst
first), escape shows the hosts (their GPU models named), `j` the ranks again; text from outside stays literal."""

from __future__ import annotations

import pytest

from hwtop.fleet.sources import PrometheusSource
from hwtop.tui.fleet.app import FleetApp
from hwtop.tui.fleet.job_screen import FleetJobScreen as JobScreen
from tests.fleet.test_job import URL, FakePrometheus, finding, rank_series, series


def gpu(host: str, index: int, model: str) -> dict:
    return series("DCGM_FI_DEV_GPU_UTIL", 90, gpu=str(index), UUID=f"GPU-{host}-{index}", modelName=model,
                  Hostname=host, instance=f"{host}:1")


def source(host1: str = "node-1") -> PrometheusSource:
    table = [finding(host1, "gpu-throttled", "warning", "GPU3"), *(gpu("node-0", i, "NVIDIA A100-SXM4-80GB")
                                                                  for i in range(8))]
    ranks = [rank_series("node-0", 0, 18.0, 12.0), rank_series(host1, 1, 0.5, 29.5)]
    return PrometheusSource(URL, "", interval=0.2, timeout=2.0, getter=FakePrometheus(table, ranks), job="train")


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_the_job_screen_names_the_straggler_its_host_and_the_likely_cause():
    app = FleetApp(source())
    async with app.run_test(size=(120, 24)) as pilot:
        for _ in range(50):
            await pilot.pause(0.05)
            if isinstance(app.screen, JobScreen) and app.screen.view is not None and app.screen.view.ranks:
                break
        screen = app.screen
        assert isinstance(screen, JobScreen)
        verdict = str(screen.verdict.render())
        assert "STRAGGLER rank 1 on node-1 (pid 101)" in verdict, verdict
        assert "likely cause on its host: WARNING gpu-throttled · GPU3" in verdict, verdict
        first = screen.table.get_row_at(0)
        assert first[0].plain.strip() == "▶ 1" and first[1].plain == "node-1" and first[2].plain == "2%"
        assert first[6].plain == "WARNING gpu-throttled"
        await pilot.press("escape")
        await pilot.pause()
        table = app.hosts_screen.table
        rows = [table.get_row_at(i) for i in range(table.row_count)]
        assert any(r[0].plain == "node-0" and r[2].plain == "8" and r[10].plain == "8x A100-SXM4-80GB" for r in rows)
        await pilot.press("j")
        await pilot.pause()
        assert isinstance(app.screen, JobScreen)
        await pilot.press("q")


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_a_hostile_host_label_is_shown_literally_on_the_job_screen():
    evil = "[@click=app.quit]n\x1b]0;x\x07"
    app = FleetApp(source(evil))
    async with app.run_test(size=(120, 24)) as pilot:
        for _ in range(50):
            await pilot.pause(0.05)
            if isinstance(app.screen, JobScreen) and app.screen.view is not None and app.screen.view.ranks:
                break
        screen = app.screen
        assert isinstance(screen, JobScreen)
        row = screen.table.get_row_at(0)
        assert row[1].plain == "[@click=app.quit]n␛]0;x␇"
        assert "[@click=app.quit]n␛]0;x␇" in str(screen.verdict.render())
        await pilot.press("escape")
        await pilot.press("q")


async def test_a_rank_known_only_from_nccl_reads_unknown_not_zero():
    """A remote rank named by NCCL alone has no stack figures: its share, phase, samples and steps are unknown,
    which the row says with `-`, not `0%`; the ranks with figures keep theirs."""
    from textual.app import App

    from hwtop.fleet.job import JobView
    from hwtop.model.job import RankFigures

    ranks = (RankFigures(0, "node-0", shares=(("collective", 0.9), ("compute", 0.1)), samples=300),
             RankFigures(5, "10.0.0.3", nccl_state="RUNNING", lag=1, nccl_only=True))
    screen = JobScreen("train", JobView("train", ranks, {}, None, None))

    class Bare(App[None]):
        def on_mount(self) -> None:
            self.push_screen(screen)

    async with Bare().run_test(size=(120, 24)) as pilot:
        await pilot.pause()
        known, remote = (screen.table.get_row_at(i) for i in range(2))
        assert [cell.plain for cell in known[2:6]] == ["90%", "90% collective", "N/A", "300"]
        assert [cell.plain for cell in remote[2:7]] == ["-", "-", "-", "-", "-"], [c.plain for c in remote]
