"""The process table's COMMAND column as a user reads it (issue 48 point 4, "no scrollbar over text"): where more
processes than rows put a scrollbar beside the table, a command line too long for what is left ends in `…` and its
padding, then the scrollbar; it was cut off mid-word by the scrollbar's two cells, as if drawn under them."""

from __future__ import annotations

import pytest

from tests.small_screen import screen_lines, started
from tests.tui.screens import lived_through, story_snapshots

SCROLLBAR = 2  # cells: Textual's vertical scrollbar


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_a_long_command_ends_in_an_ellipsis_before_the_scrollbar(size: tuple[int, int]) -> None:
    app = lived_through(story_snapshots("dgx-a100:straggler", seconds=10.0, step=5.0))
    async with app.run_test(size=size) as pilot:
        await started(app, pilot)
        table = app.main.process_table
        assert table.show_vertical_scrollbar  # more processes than rows: the case seen
        lines = screen_lines(app)
        header = next(i for i, line in enumerate(lines) if " PID " in line and "COMMAND" in line)
        start = lines[header].index("│") + 1
        end = start + table.scrollable_content_region.width  # where the scrollbar begins
        rows = table.rows_shown[:table.scrollable_content_region.height - 1]
        assert rows
        for row, line in zip(rows, lines[header + 1:], strict=False):
            drawn = line[start:end]
            assert drawn.endswith(" "), (drawn, line)  # the cell's padding, then the scrollbar
            assert drawn.rstrip().endswith("…" if len(row.command) > 20 else row.command), drawn
            shown = drawn.rstrip().rstrip("…")
            assert row.command.startswith(shown.split("  ")[-1].strip()), (shown, row.command)
