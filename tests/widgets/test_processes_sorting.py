"""Sorting the process table as a user reads it: the column named as people say it, `r` or the same
header again turns the order round, and an arrow in the sorted column's header says which way."""

from __future__ import annotations

import pytest

from hwtop.tui.app import HwtopApp
from hwtop.widgets.processes import Row, sort_rows
from tests.factories import ScriptedSource, host_snapshot
from tests.small_screen import screen_lines


async def started(app: HwtopApp, pilot) -> None:
    app.animation_level = "none"  # a scroll lands at once: what is checked is where, not how smoothly
    await app.first_frame.wait()
    await pilot.pause()


def pids(app: HwtopApp) -> list[int]:
    return [row.pid for row in app.main.process_table.rows_shown]


def header(app: HwtopApp) -> str:
    return " ".join(label.plain for label in app.main.process_table._labels)


async def test_r_reverses_and_the_header_shows_the_direction() -> None:
    app = HwtopApp(ScriptedSource([host_snapshot()]))
    async with app.run_test(size=(80, 24)) as pilot:
        await started(app, pilot)
        table = app.main.process_table
        assert pids(app) == [41000, 41010, 812]
        assert "CPU% ▼" in header(app) and "sorted by CPU ▼" in str(table.border_subtitle)
        await pilot.press("r")
        await pilot.pause()
        assert pids(app) == [812, 41010, 41000]
        assert "CPU% ▲" in header(app) and "▼" not in header(app)
        assert any("CPU% ▲" in line for line in screen_lines(app))  # drawn, not only stored
        await pilot.press("s")  # the next column starts in its own direction
        await pilot.pause()
        assert table.sort_key == "rss" and "RSS ▼" in header(app) and "CPU%" in header(app)
        assert "CPU% ▲" not in header(app)
        assert "sorted by memory (RSS) ▼" in str(table.border_subtitle)


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_a_second_click_on_the_sorted_header_reverses() -> None:
    app = HwtopApp(ScriptedSource([host_snapshot()]))
    async with app.run_test(size=(160, 40)) as pilot:
        await started(app, pilot)
        table = app.main.process_table
        await pilot.click(table, offset=(3, 1))  # PID's header (inside the border)
        await pilot.pause()
        assert table.sort_key == "pid" and pids(app) == [812, 41000, 41010] and "PID ▲" in header(app)
        await pilot.click(table, offset=(3, 1))
        await pilot.pause()
        assert pids(app) == [41010, 41000, 812] and "PID ▼" in header(app)
        assert "sorted by PID ▼" in str(table.border_subtitle)


def test_unknown_values_stay_last_in_both_directions() -> None:
    rows = [Row(1, "a", None, None, None, "", None, None, "x"), Row(2, "b", 5.0, 1, 1, "", None, None, "y"),
            Row(3, "c", 9.0, 2, 1, "", None, None, "z")]
    assert [r.pid for r in sort_rows(rows, "cpu")] == [3, 2, 1]
    assert [r.pid for r in sort_rows(rows, "cpu", descending=False)] == [2, 3, 1]
    assert [r.pid for r in sort_rows(rows, "user")] == [1, 2, 3]
    assert [r.pid for r in sort_rows(rows, "user", descending=True)] == [3, 2, 1]


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_the_same_processes_in_the_same_view_are_not_sorted_again() -> None:
    """The process list is re-read every other tick at a 1 s refresh: a tick that brings the same list (here every
    tick: the scripted source repeats its snapshot) leaves the table alone; a new sort rebuilds it at once."""
    app = HwtopApp(ScriptedSource([host_snapshot()]), interval=0.05)
    async with app.run_test(size=(80, 24)) as pilot:
        await started(app, pilot)
        table = app.main.process_table
        built: list[int] = []
        set_rows = table.set_rows
        table.set_rows = lambda keys, rows, cursor=None: (built.append(len(keys)), set_rows(keys, rows, cursor))
        ticks = app.ticks
        await pilot.pause(0.3)
        assert app.ticks > ticks and built == []
        await pilot.press("r")
        await pilot.pause()
        assert built == [3] and pids(app) == [812, 41010, 41000]
