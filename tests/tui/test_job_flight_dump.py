"""`F` in the job view asks the job's ranks for their Flight Recorder dumps and shows a line per rank where `d` shows
a stack; on a demo machine, whose processes are simulated, it says so and writes nothing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from msgspec.structs import replace

import hwtop.probes.flight_recorder.ask as ask_module
from hwtop.demo.machine import demo_sampler
from hwtop.demo.story import RANK_PID
from hwtop.model.flight import FlightRank
from hwtop.model.job import RankFigures
from hwtop.probes.flight_recorder.ask import DUMPED_WHERE
from hwtop.tui.app import HwtopApp
from hwtop.tui.job_screen import JobScreen
from tests.factories import ScriptedSource
from tests.small_screen import job_snapshot
from tests.tui.screens import EPOCH, FakeClock
from tests.waiting import pilot_until

TITLE = "Flight Recorder: each rank asked for its dump (F)"


def said(screen: JobScreen) -> list[str]:
    return [line.plain for line in screen.panel.stack]


async def test_f_on_a_demo_job_writes_nothing_and_says_its_processes_are_simulated(
        monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[object] = []
    monkeypatch.setattr(ask_module, "request_dump", lambda *args, **kwargs: asked.append(args))
    clock = FakeClock()
    clock.t = 30.0
    app = HwtopApp(demo_sampler("gtx1660s", seed=7, clock=clock, wall=lambda: EPOCH + clock.t),
                   interval=0.05)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot_until(pilot, lambda: app.snapshot is not None and app.snapshot.job is not None and
                          any(r.pid == RANK_PID for r in app.snapshot.job.ranks))
        await pilot.press("j")
        await pilot_until(pilot, lambda: isinstance(app.screen, JobScreen))
        screen = app.screen
        assert isinstance(screen, JobScreen) and screen.simulated
        await pilot.press("F")
        await pilot_until(pilot, lambda: said(screen))
        assert said(screen) == [TITLE, "a demo machine's processes are simulated: they have no dump pipe, and nothing "
                                       "was written. On a real job whose ranks set TORCH_NCCL_DEBUG_INFO_PIPE_FILE, F "
                                       "asks each rank for its dump."]
    assert asked == []  # no pipe was opened, let alone written


async def test_f_on_a_running_job_asks_each_rank_and_shows_a_line_per_rank(tmp_path: Path) -> None:
    """Rank 0 is this test's own process (its user and file system), with a dump pipe in tmp_path that it reads."""
    stem = f"{tmp_path}/fr_pipe_"
    base = job_snapshot()
    assert base.job is not None
    ranks = (RankFigures(0, "here", pid=os.getpid(), flight=FlightRank(buffer=2000, pipe=stem)),)
    app = HwtopApp(ScriptedSource([replace(base, job=replace(base.job, ranks=ranks))]), interval=3600.0)
    os.mkfifo(tmp_path / "fr_pipe_0.pipe")
    reader = os.open(tmp_path / "fr_pipe_0.pipe", os.O_RDONLY | os.O_NONBLOCK)  # as the rank's watchdog does
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await app.first_frame.wait()
            await pilot.press("j")
            await pilot_until(pilot, lambda: isinstance(app.screen, JobScreen))
            screen = app.screen
            assert isinstance(screen, JobScreen)
            await pilot.press("F")
            await pilot_until(pilot, lambda: said(screen)[:1] == [TITLE])  # its answer, past "asking…"
            assert said(screen) == [TITLE, f"rank 0 (pid {os.getpid()}): asked through {stem}0.pipe", DUMPED_WHERE]
        assert os.read(reader, 128) == b"1"
    finally:
        os.close(reader)
