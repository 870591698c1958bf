"""Every dialog keeps one keyboard convention: the first field has the focus when it opens, escape
cancels, enter confirms."""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from textual.app import App
from textual.containers import VerticalScroll
from textual.pilot import Pilot
from textual.screen import ModalScreen
from textual.widgets import Button, Select

from hwtop.probes.signals import Target
from hwtop.tui.advice_screen import AdviceScreen
from hwtop.tui.dialog import Dialog
from hwtop.tui.help import HelpScreen
from hwtop.tui.report_screen import ReportScreen
from hwtop.tui.signal_dialog import SignalDialog
from hwtop.tui.workload_dialog import WorkloadDialog
from tests.factories import StillContext

NOTHING = object()


class Host(App[None]):
    """An empty app that opens one dialog and keeps what it was dismissed with."""

    def __init__(self, dialog: ModalScreen) -> None:
        super().__init__()
        self.dialog = dialog
        self.result: object = NOTHING

    def on_mount(self) -> None:
        self.animation_level = "none"
        self.push_screen(self.dialog, self._done)

    def _done(self, result: object) -> None:
        self.result = result


@asynccontextmanager
async def opened(dialog: ModalScreen) -> AsyncIterator[tuple[Host, Pilot[None]]]:
    """An 80x24 app with `dialog` pushed and drawn."""
    app = Host(dialog)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        yield app, pilot


def target() -> Target:
    return Target(4242, 1, "alice", 1000, "python train.py")


DIALOGS = {
    "workload": (lambda: WorkloadDialog("cpu"), Select,
                 ["--scenario", "balanced", "--device", "cpu", "--world-size", "2", "--seconds", "120"]),
    "signal": (lambda: SignalDialog(target()), Button, int(signal.SIGTERM)),
    "help": (HelpScreen, VerticalScroll, None),
    "advice": (lambda: AdviceScreen(StillContext()), VerticalScroll, None),
    "report": (lambda: ReportScreen("rtx3090"), VerticalScroll, None),
}


@pytest.mark.parametrize("name", sorted(DIALOGS))
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_focus_first_field_escape_cancels(name: str) -> None:
    make, first, _ = DIALOGS[name]
    async with opened(make()) as (app, pilot):
        assert isinstance(app.screen, Dialog)
        assert isinstance(app.screen.focused, first), app.screen.focused
        await pilot.press("escape")
        await pilot.pause()
        assert app.result is None and not isinstance(app.screen, Dialog)


@pytest.mark.parametrize("name", sorted(DIALOGS))
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_enter_confirms(name: str) -> None:
    make, _, confirmed = DIALOGS[name]
    async with opened(make()) as (app, pilot):
        await pilot.press("enter")
        await pilot.pause()
        assert app.result == confirmed and not isinstance(app.screen, Dialog)


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_workload_enter_in_the_options_field_starts_with_them() -> None:
    async with opened(WorkloadDialog("cpu")) as (app, pilot):
        await pilot.press("tab")
        options = app.screen.query_one("#options")
        assert options.has_focus
        options.value = "--device cpu --seconds 5"  # type: ignore[attr-defined]
        await pilot.press("enter")
        await pilot.pause()
        assert app.result == ["--scenario", "balanced", "--device", "cpu", "--seconds", "5"]


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_workload_enter_on_an_open_scenario_list_picks_it_and_does_not_start() -> None:
    async with opened(WorkloadDialog("cpu")) as (app, pilot):
        await pilot.press("space")  # opens the list
        await pilot.pause()
        select = app.screen.query_one(Select)
        assert select.expanded
        await pilot.press("down", "enter")
        await pilot.pause()
        assert app.result is NOTHING and select.value == "dataloader-bound" and not select.expanded
        await pilot.press("enter")
        await pilot.pause()
        assert app.result is not NOTHING and app.result[:2] == ["--scenario", "dataloader-bound"]  # type: ignore[index]


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_signal_dialog_cancel_button_with_enter_cancels() -> None:
    async with opened(SignalDialog(target())) as (app, pilot):
        await pilot.press("tab", "tab")
        assert isinstance(app.screen.focused, Button) and app.screen.focused.id == "cancel"
        await pilot.press("enter")
        await pilot.pause()
        assert app.result is None
