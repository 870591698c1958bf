"""The main screen draws only what changed: a widget with no changed cell is not asked for its lines, one with a
changed line is asked for that line, and what a terminal shows after the partial updates is what a full redraw
draws, cell by cell, over a demo story's frames."""

from __future__ import annotations

import pytest
from textual.geometry import Region
from textual.widget import Widget

from benchmarks.render_frames import frames_of, measure
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
async def test_the_terminal_shows_what_a_full_redraw_draws(size: tuple[int, int]) -> None:
    """Twelve frames of the straggler story (a finding comes, panels change height, rows move): after each, the
    bytes sent so far, applied to a terminal, equal the whole screen drawn from nothing (measure raises Stale)."""
    frames = frames_of(12, None, "dgx-a100:straggler")
    per_frame = await measure(frames, size, warmup=0, screens=None, check=True)
    assert len(per_frame) == 11
