"""A focused job that ended: j still opens its last view, says how it ended, and f picks another."""

from __future__ import annotations

import pytest

from hwtop.tui.app import HwtopApp
from hwtop.tui.job_screen import JobScreen
from hwtop.tui.topology_screen import TopologyScreen
from tests.factories import ScriptedSource
from tests.small_screen import job_snapshot, screen_lines, started


@pytest.mark.slow  # a long Pilot session (several screens, live ticks): the slow step runs it
async def test_j_after_the_job_ended_opens_its_view_again_and_says_how_it_ended() -> None:
    app = HwtopApp(ScriptedSource([job_snapshot(ended=True)]))
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await started(app, pilot)
        for _ in range(2):  # the second time is the one that showed nothing
            await pilot.press("j")
            await pilot.pause()
            assert isinstance(app.screen, JobScreen)
            lines = screen_lines(app)
            assert any("50012" in line for line in lines), lines  # its last view, drawn
            assert any(" Back " in line for line in lines[-1:]), lines[-1]  # the footer too
            assert any("f on a process, picks another job" in line for line in lines)
            await pilot.press("escape")
            await pilot.pause()
            assert not isinstance(app.screen, JobScreen)
        said = [str(n.message) for n in app._notifications]
        assert any("job ended (exit codes pid 50000: 0, pid 50001: 1)" in m for m in said), said


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_topology_opens_again_after_it_was_closed() -> None:
    app = HwtopApp(ScriptedSource([job_snapshot()]))
    async with app.run_test(size=(80, 24)) as pilot:
        await started(app, pilot)
        for _ in range(2):
            await pilot.press("t")
            await pilot.pause()
            assert isinstance(app.screen, TopologyScreen)
            assert any(line.strip() for line in screen_lines(app)[1:-1])
            await pilot.press("escape")
            await pilot.pause()


@pytest.mark.slow  # a long Pilot session (several screens, live ticks): the slow step runs it
async def test_j_and_t_in_turn_go_back_to_the_open_screen_instead_of_stacking_it_again() -> None:
    app = HwtopApp(ScriptedSource([job_snapshot()]))
    async with app.run_test(size=(80, 24)) as pilot:
        await started(app, pilot)
        for key in "jtjtj":
            await pilot.press(key)
            await pilot.pause()
        assert [type(s).__name__ for s in app.screen_stack[1:]] == ["JobScreen"]  # not J, T, J, T, J
        await pilot.press("escape")
        await pilot.pause()
        assert len(app.screen_stack) == 1  # one escape back to the monitor
