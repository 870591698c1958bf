"""Nothing is drawn outside a panel's border: on the monitor, the job view and the topology, at 80x24, 120x40 and
200x60, every row that starts with a border ends with one (the job view's and the topology's scrollbar was drawn
beside their right border, outside it)."""

from __future__ import annotations

import pytest

from tests.small_screen import screen_lines
from tests.tui.screens import lived_through, story_snapshots

LEFT, RIGHT = "│╭╰├", "│╮╯┤"


def outside(lines: list[str]) -> list[tuple[int, str]]:
    """(row, its end) of each row that starts inside a border and ends with something past it."""
    return [(row, line.rstrip()[-12:]) for row, line in enumerate(lines)
            if line.lstrip()[:1] in LEFT and line.rstrip()[-1:] not in RIGHT]


def test_the_check_sees_a_glyph_past_a_border() -> None:
    assert outside(["╭─ Job ─╮", "│ rank 0 │▂▂", "╰───────╯"]) == [(1, "│ rank 0 │▂▂")]
    assert outside(["╭─ CPU ─╮╭─ Memory ─╮", " hwtop │ host │ 12:00:01", "  Advice ✓ no problems seen"]) == []


@pytest.mark.parametrize("size", [(80, 24), pytest.param((120, 40), marks=pytest.mark.slow),
                                  pytest.param((200, 60), marks=pytest.mark.slow)])  # the fast suite: one size
async def test_no_glyph_outside_a_border_on_the_monitor_the_job_view_and_the_topology(size) -> None:
    app = lived_through(story_snapshots("dgx-a100:straggler", seconds=20.0, step=5.0))
    app.interval = 3600.0
    async with app.run_test(size=size) as pilot:
        await app.first_frame.wait()
        await pilot.pause()
        assert outside(screen_lines(app)) == []
        for key in ("j", "t"):
            await pilot.press(key)
            await pilot.pause()
            lines = screen_lines(app)
            assert outside(lines) == [], (key, "\n".join(lines))
