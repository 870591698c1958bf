"""On a demo machine the keys that act on real processes (k signal, f focus, w/x the embedded job) refuse with a
line that says why: the demo's pids are simulated and may belong to real processes of this machine. Its story's job
is focused as --pid focuses a real one: j opens its view in every story (a hang is where the ranks side by side
matter most)."""

from __future__ import annotations

import pytest

from hwtop.cli.main import make_sampler
from hwtop.demo.machine import demo_sampler
from hwtop.demo.story import STORIES
from hwtop.tui.app import DEMO_JOB, DEMO_PIDS, HwtopApp
from hwtop.tui.job_screen import JobScreen
from tests.matrix import fast_few
from tests.small_screen import screen_lines
from tests.tui.screens import EPOCH, FakeClock

REFUSALS = (("k", DEMO_PIDS), ("f", DEMO_PIDS), ("w", DEMO_JOB), ("x", DEMO_JOB))


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_keys_that_touch_real_processes_refuse_on_a_demo() -> None:
    app = HwtopApp(make_sampler("gtx1660s:starved", no_gpu=False), interval=0.2)
    async with app.run_test(size=(160, 50)) as pilot:
        while app.snapshot is None or not app.main.process_table.rows_shown:
            await pilot.pause(0.05)
        app.main.process_table.focus()
        for key, message in REFUSALS:
            app.clear_notifications()
            await pilot.press(key)
            await pilot.pause()
            assert [n.message for n in app._notifications] == [message], key
            assert app.screen is app.screen_stack[0], key  # no dialog or screen opened


@pytest.mark.parametrize("story", fast_few(["steady", *STORIES], lambda story: story == "nccl-hang"))
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_j_opens_the_job_view_in_every_story(story: str) -> None:
    clock = FakeClock()
    sampler = demo_sampler("dgx-a100" if story == "steady" else f"dgx-a100:{story}", seed=5, clock=clock,
                           wall=lambda: EPOCH + clock.t)
    clock.t = 45.0  # past nccl-hang's start (30 s), before oom's crash (52 s)
    app = HwtopApp(sampler, interval=0.2)
    async with app.run_test(size=(120, 40)) as pilot:
        while app.snapshot is None:
            await pilot.pause(0.05)
        app.clear_notifications()
        await pilot.press("j")
        await pilot.pause()
        assert isinstance(app.screen, JobScreen), [n.message for n in app._notifications]
        screen = "\n".join(screen_lines(app))
        assert "RANK" in screen and all(f" 4100{rank} " in screen for rank in range(8)), screen  # every rank
