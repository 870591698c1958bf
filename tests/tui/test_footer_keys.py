"""Every key a footer shows does something a user sees, on every screen and in every mode: the keys are read off
each screen's own key bar (widgets/keys.py's declarations, less what check_action hides), pressed one at a time,
and each must change the screen, open another or say something (a notification). `q` quits (the terminal comes
back): it is checked to be bound to quit, not pressed."""

from __future__ import annotations

import pytest

from hwtop.tui.app import HwtopApp
from hwtop.tui.fleet.app import FleetApp
from hwtop.widgets.key_bar import KeyBar
from tests.factories import ScriptedSource
from tests.small_screen import job_snapshot, screen_lines
from tests.tui.screens import lived_through, story_snapshots
from tests.tui.test_fleet_screen import StillFleet
from tests.waiting import pilot_until


def shown_keys(app) -> list[str]:  # noqa: ANN001 - a running App
    shown, _ = app.screen.query_one(KeyBar).keys()
    return [item.key for item in shown if item.enabled]


async def silent_keys(app, pilot, screen_key: str = "") -> list[str]:  # noqa: ANN001 - an App and its Pilot
    """The keys the footer of the screen that `screen_key` opens shows that change nothing a user sees, each
    pressed on that screen as it was (the screens it opened closed again)."""
    if screen_key:
        await pilot.press(screen_key)
        await pilot.pause()
    depth, silent = len(app.screen_stack), []
    keys = shown_keys(app)
    assert keys, screen_key
    for key in keys:
        if key == "q":
            continue
        app.clear_notifications()
        before = (screen_lines(app), len(app.screen_stack))
        await pilot.press(key)
        for _ in range(3):
            await pilot.pause()
        if (screen_lines(app), len(app.screen_stack)) == before and not app._notifications:
            silent.append(key)
        while len(app.screen_stack) > depth:
            app.pop_screen()
            await pilot.pause()
        if len(app.screen_stack) < depth:  # a key that goes back (escape): the screen opened again
            await pilot.press(screen_key)
            await pilot.pause()
    return silent


def quits(app) -> bool:  # noqa: ANN001 - a running App
    return any(b.binding.key == "q" and b.binding.action.endswith("quit")
               for b in app.screen.active_bindings.values())


@pytest.mark.slow  # three screens' keys, one at a time: the slow step runs it
async def test_every_footer_key_of_a_demo_story_does_something_visible() -> None:
    """A demo machine's story (its pids simulated): the monitor, the job view (`d` says why there is no stack to
    read, as the advice that names it is followed) and the topology."""
    app = lived_through(story_snapshots("dgx-a100:straggler", seconds=20.0, step=5.0))
    app.session.simulated = True  # as a demo machine's session: its processes are not this machine's
    app.interval = 3600.0
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await app.first_frame.wait()
        await pilot.pause()
        assert quits(app) and await silent_keys(app, pilot) == []
        for screen in ("j", "t"):
            assert await silent_keys(app, pilot, screen) == [], screen
            assert quits(app) and ("d" in shown_keys(app)) is (screen == "j")
            app.pop_screen()
            await pilot.pause()


@pytest.mark.slow  # py-spy on a pid that is gone, and the job view's keys one at a time: the slow step runs it
async def test_every_footer_key_of_a_focused_job_does_something_visible() -> None:
    """A job on this machine: `d` reads the selected process's stack and brings it in view."""
    app = HwtopApp(ScriptedSource([job_snapshot()]), interval=3600.0)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await app.first_frame.wait()
        await pilot.pause()
        assert await silent_keys(app, pilot, "j") == []
        assert "d" in shown_keys(app)


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_every_footer_key_of_the_fleet_does_something_visible() -> None:
    """Exporters read directly, no --job: `j` (the jobs Prometheus holds) has nothing to open and is not shown."""
    app = FleetApp(StillFleet())
    async with app.run_test(size=(120, 24), notifications=True) as pilot:
        await pilot_until(pilot, lambda: app.hosts_screen.table.row_count >= 3)
        await pilot.pause()
        assert "j" not in shown_keys(app)
        assert quits(app) and await silent_keys(app, pilot) == []
