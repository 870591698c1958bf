"""The main screen draws only what changed: a widget with no changed cell is not asked for its lines, one with a
changed line is asked for that line, and what a terminal shows after the partial updates is what a full redraw
draws, cell by cell, over a demo story's frames; on the job and topology screens too."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.geometry import Region
from textual.widget import Widget

import hwtop.tui.app as app_module
from benchmarks.render_frames import Counts, Terminal, frames_of, install, measure
from hwtop.tui import textual_compat
from hwtop.tui.app import HwtopApp
from tests.factories import ScriptedSource, host_snapshot


async def test_a_widget_with_no_changed_cell_is_not_asked_for_its_lines(monkeypatch) -> None:
    """The clock at the top and one process row near the bottom change: Textual's own compositor asked every widget
    between them (the panels, their containers, the screen) for all of its lines."""
    app = HwtopApp(ScriptedSource([host_snapshot()]), interval=3600.0)  # no tick of its own meanwhile
    async with app.run_test(size=(120, 40)) as pilot:
        await app.first_frame.wait()
        await pilot.pause()
        asked: list[tuple[Widget, int]] = []
        original = Widget.render_lines

        def recording(widget: Widget, crop: Region):  # noqa: ANN202 - Textual's own signature
            asked.append((widget, crop.height))
            return original(widget, crop)

        monkeypatch.setattr(Widget, "render_lines", recording)
        header, table = app.main.header, app.main.process_table
        table.refresh()  # what the start's layouts left to repaint in it (Textual keeps it until the next update)
        for _ in range(100):  # until the start's updates are all drawn
            asked.clear()
            await pilot.pause()
            if not asked:
                break
        header.refresh(Region(100, 0, 8, 1))
        table.refresh(Region(0, 2, 40, 1))  # a row under the column header
        await pilot.pause()
        assert {widget for widget, _ in asked} == {header, table}
        assert sorted(lines for _, lines in asked) == [1, 1]


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_the_terminal_shows_what_a_full_redraw_draws(size: tuple[int, int]) -> None:
    """Twelve frames of the straggler story (a finding comes, panels change height, rows move): after each, the
    bytes sent so far, applied to a terminal, equal the whole screen drawn from nothing (measure raises Stale)."""
    frames = frames_of(12, None, "dgx-a100:straggler")
    per_frame = await measure(frames, size, warmup=0, screens=None, check=True)
    assert len(per_frame) == 11


class _Shown(HwtopApp):
    """The app without a sampler of its own: the test hands it each Frame."""

    CSS_PATH = str(Path(app_module.__file__).parent / str(HwtopApp.CSS_PATH))  # found beside the app

    async def _poll(self, first_wait: float = 0.0) -> None:
        return


@pytest.mark.parametrize("screen", ["job", "topology"])
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_the_job_and_topology_screens_show_what_a_full_redraw_draws(screen: str) -> None:
    """The same compositor on the other full screens (the header's clock, the panel's changing rows, the panel
    scrolled part way in its container): after each of eight frames the terminal equals a full redraw."""
    from textual.containers import VerticalScroll

    frames = frames_of(8, None, "dgx-a100:straggler")
    holder: dict[str, Terminal] = {}
    undo = install(Counts(), lambda: holder.get("terminal"))
    app = _Shown(ScriptedSource([frames[0].snapshot]))
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            holder["terminal"] = terminal = Terminal(80, 24)
            app.show(frames[0])
            await pilot.pause()
            getattr(app, f"action_{screen}")()
            await pilot.pause()
            assert isinstance(app.screen, textual_compat.DirtyLinesScreen)
            app.screen.query_one(VerticalScroll).scroll_to(y=3, animate=False)
            app.refresh()  # the whole screen once: the terminal model starts from a full frame
            await pilot.pause()
            for frame in frames[1:]:
                app.show(frame)
                await pilot.pause()
                fresh = Terminal(80, 24)
                for y, strip in enumerate(textual_compat.screen_redrawn(app.screen)):
                    fresh.feed(f"\x1b[{y + 1};1H" + strip.render(app.console))
                assert fresh.cells == terminal.cells
    finally:
        undo()
