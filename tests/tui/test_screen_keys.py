"""Screens own their keys: the main screen binds its own (the processes, the advice pane) and lists the app's in the
order widgets/keys.py declares them; the app binds only what every screen has; the palette reaches each action
where it lives."""

from __future__ import annotations

from hwtop.tui.app import PALETTE, HwtopApp
from hwtop.tui.main_screen import MainScreen
from hwtop.widgets import keys
from tests.factories import ScriptedSource, host_snapshot


def test_the_app_binds_none_of_the_main_screens_own_keys() -> None:
    assert keys.MAIN_SCREEN_OWN == {"cycle_sort", "reverse_sort", "filter", "tree", "advice", "focus_process",
                                        "signal_process"}
    assert not {b.action for b in HwtopApp.BINDINGS} & keys.MAIN_SCREEN_OWN
    for action in keys.MAIN_SCREEN_OWN:
        assert hasattr(MainScreen, f"action_{action}") and not hasattr(HwtopApp, f"action_{action}"), action


def test_the_main_screen_binds_every_key_in_the_declared_order() -> None:
    bound = [(b.key, b.action.removeprefix("app.")) for b in MainScreen.BINDINGS]
    assert bound == [(key.keys, key.action) for key in keys.MAIN]
    for b in MainScreen.BINDINGS:  # the app's through the app: one action, bound once
        assert b.action.startswith("app.") != (b.action in keys.MAIN_SCREEN_OWN), b.action


async def test_the_palette_runs_each_action_where_it_lives() -> None:
    app = HwtopApp(ScriptedSource([host_snapshot()]))
    async with app.run_test(size=(120, 40)) as pilot:
        await app.first_frame.wait()
        await pilot.pause()
        commands = {command.title: command.callback for command in app.get_system_commands(app.screen)}
        for title, _, action in PALETTE:
            owner = getattr(commands[title], "__self__", None)
            assert owner is (app.main if action in keys.MAIN_SCREEN_OWN else app), title
        table = app.main.process_table
        commands["Sort processes"]()
        assert table.sort_key == "rss"
