"""Every screen that can be taller than the terminal scrolls from the keyboard at 80x24: End and PageDown go
down, Home and PageUp back to the top (help, the advice screen, the box report, the job view, topology). Two
findings fit the advice screen at 80x24: it is tried at 80x14."""

from __future__ import annotations

import pytest
from textual.containers import VerticalScroll

from hwtop.tui.app import HwtopApp
from tests.factories import ScriptedSource, demo_snapshots, with_demo_topology
from tests.small_screen import job_snapshot, started
from tests.widgets.test_advice import troubled_frames, warmed_app


def app_for(screen: str) -> HwtopApp:
    if screen == "advice":
        return warmed_app(troubled_frames())
    if screen == "job":
        return HwtopApp(ScriptedSource([job_snapshot(workers=30)]))
    return HwtopApp(ScriptedSource(with_demo_topology(demo_snapshots("dgx-a100"), "dgx-a100")))


KEY_OF = {"help": "question_mark", "advice": "a", "report": "b", "job": "j", "topology": "t"}


@pytest.mark.parametrize("screen", sorted(KEY_OF))
@pytest.mark.parametrize(("down", "up"), [("end", "home"), pytest.param("pagedown", "pageup", marks=pytest.mark.slow)])
async def test_a_tall_screen_scrolls_from_the_keyboard_at_80x24(screen: str, down: str, up: str) -> None:
    app = app_for(screen)
    async with app.run_test(size=(80, 14) if screen == "advice" else (80, 24)) as pilot:
        await started(app, pilot)
        await pilot.press(KEY_OF[screen])
        await pilot.pause(0.5)
        scroll = app.screen.query_one(VerticalScroll)
        if screen == "report":  # read on a worker thread
            for _ in range(100):
                if scroll.max_scroll_y > 0:
                    break
                await pilot.pause(0.1)
        assert scroll.max_scroll_y > 0, f"{screen} fits the terminal: nothing to scroll"
        await pilot.press(down)
        await pilot.pause()
        assert scroll.scroll_y > 0
        if down == "end":
            assert scroll.scroll_y == scroll.max_scroll_y
        await pilot.press(up)
        await pilot.pause()
        assert scroll.scroll_y == 0
