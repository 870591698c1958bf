"""On a demo machine the keys that act on real processes (k signal, f focus, w/x the embedded job) refuse with a
line that says why: the demo's pids are simulated and may belong to real processes of this machine."""

from __future__ import annotations

import pytest

from hwtop.cli.main import make_sampler
from hwtop.tui.app import DEMO_JOB, DEMO_JOB_VIEW, DEMO_PIDS, HwtopApp


@pytest.mark.parametrize(("key", "message"), [("k", DEMO_PIDS), ("f", DEMO_PIDS), ("w", DEMO_JOB), ("x", DEMO_JOB),
                                              ("j", DEMO_JOB_VIEW)])
async def test_keys_that_touch_real_processes_refuse_on_a_demo(key, message) -> None:
    app = HwtopApp(make_sampler("dgx-a100:starved", no_gpu=False), interval=0.2)
    async with app.run_test(size=(160, 50)) as pilot:
        while app.snapshot is None or not app.process_table.rows_shown:
            await pilot.pause(0.05)
        app.process_table.focus()
        await pilot.press(key)
        await pilot.pause()
        assert [n.message for n in app._notifications] == [message]
        assert app.screen is app.screen_stack[0]  # no dialog opened
