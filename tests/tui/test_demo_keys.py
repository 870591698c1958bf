"""On a demo machine the keys that act on real processes (k signal, f focus, w/x the embedded job, j the focused
job's view) refuse with a line that says why: the demo's pids are simulated and may belong to real processes of
this machine."""

from __future__ import annotations

from hwtop.cli.main import make_sampler
from hwtop.tui.app import DEMO_JOB, DEMO_JOB_VIEW, DEMO_PIDS, HwtopApp

REFUSALS = (("k", DEMO_PIDS), ("f", DEMO_PIDS), ("w", DEMO_JOB), ("x", DEMO_JOB), ("j", DEMO_JOB_VIEW))


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
