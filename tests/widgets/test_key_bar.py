"""The footer (widgets/key_bar.py): the keys it shows follow the screen, a click presses one, a narrow terminal
drops whole keys and keeps the command palette's."""

from __future__ import annotations

import pytest

from hwtop.model.frame import Frame
from hwtop.tui.app import HwtopApp
from hwtop.widgets.key_bar import KeyBar
from tests.factories import ScriptedSource, demo_snapshots, host_snapshot

MAIN_LINE = " q Quit  p Pause  s Sort  t Topology  a Advice  w Workload  ? Help "


async def _started(app: HwtopApp, pilot) -> None:
    await app.first_frame.wait()
    await pilot.pause()


def _line(app: HwtopApp) -> str:
    bar = app.screen.query_one(KeyBar)
    return bar.render_line(0).text


async def test_the_main_screen_shows_its_keys_and_the_palette_at_the_right() -> None:
    app = HwtopApp(ScriptedSource([host_snapshot()]))
    async with app.run_test(size=(120, 30)) as pilot:
        await _started(app, pilot)
        line = _line(app)
        assert len(line) == 120
        assert line.startswith(MAIN_LINE)
        assert line.endswith("▏^p palette ")
        assert "Step" not in line and "Reverse" not in line  # replay-only keys hidden, show=False keys left out


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_a_pushed_screen_shows_its_own_keys() -> None:
    app = HwtopApp(ScriptedSource(demo_snapshots("dgx-a100")))
    async with app.run_test(size=(120, 30)) as pilot:
        await _started(app, pilot)
        await pilot.press("t")
        await pilot.pause()
        assert _line(app).startswith(" esc Back  r Refresh  q Quit  p Pause ")  # the screen's keys, then the app's
        await pilot.press("escape")
        await pilot.pause()
        assert _line(app).startswith(MAIN_LINE)


async def test_replay_keys_appear_in_a_replay(tmp_path) -> None:
    from hwtop.recording.replay import ReplaySource
    from hwtop.recording.store import Recorder, load

    path = tmp_path / "run.jsonl"
    recorder = Recorder(str(path), 1.0, "trainbox")
    for snapshot in demo_snapshots("dgx-a100", 3):
        recorder.write(Frame(snapshot))
    recorder.close()
    app = HwtopApp(ReplaySource(load(str(path))))
    async with app.run_test(size=(200, 30)) as pilot:
        await _started(app, pilot)
        line = _line(app)
        assert " . Step  , Back  ] +10s  [ -10s  + Faster  - Slower " in line
        assert " w Workload " not in line  # check_action hides what a replay cannot do


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_a_click_on_a_key_presses_it() -> None:
    app = HwtopApp(ScriptedSource([host_snapshot()]))
    async with app.run_test(size=(120, 30)) as pilot:
        await _started(app, pilot)
        assert app.main.process_table.sort_key == "cpu"
        x = MAIN_LINE.index(" s Sort")
        await pilot.click(KeyBar, offset=(x + 1, 0))
        await pilot.pause()
        assert app.main.process_table.sort_key == "rss"
        await pilot.click(KeyBar, offset=(MAIN_LINE.index(" ? Help") + 3, 0))
        await pilot.pause()
        assert type(app.screen).__name__ == "HelpScreen"


async def test_a_focus_change_redraws_the_bar() -> None:
    """The bar follows the screen's bindings through Textual's signal (a focus change, a check_action that
    changed its mind): it asks to be drawn again when the signal comes."""
    app = HwtopApp(ScriptedSource([host_snapshot()]))
    async with app.run_test(size=(120, 30)) as pilot:
        await _started(app, pilot)
        bar = app.screen.query_one(KeyBar)
        asked: list[object] = []
        refresh = bar.refresh

        def counted(*args, **kwargs):
            asked.append(args)
            return refresh(*args, **kwargs)
        bar.refresh = counted  # type: ignore[method-assign]
        app.main.advice_panel.focus()
        await pilot.pause()
        assert asked


async def test_a_narrow_terminal_drops_whole_keys_and_keeps_the_palette() -> None:
    app = HwtopApp(ScriptedSource([host_snapshot()]))
    async with app.run_test(size=(50, 24)) as pilot:
        await _started(app, pilot)
        line = _line(app)
        assert len(line) == app.screen.query_one(KeyBar).size.width and line.endswith("▏^p palette ")
        assert line.startswith(" q Quit  p Pause  s Sort ") and "Topo" not in line  # no key cut in half


async def test_a_bar_narrower_than_the_palette_key_shows_the_keys_that_fit() -> None:
    app = HwtopApp(ScriptedSource([host_snapshot()]))
    async with app.run_test(size=(11, 8)) as pilot:
        await _started(app, pilot)
        bar = app.screen.query_one(KeyBar)
        line = _line(app)
        assert len(line) == bar.size.width and line.startswith(" q Quit ") and "palette" not in line
