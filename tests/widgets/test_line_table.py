"""Redraw only what changed: the process table's line-API drawing repaints the rows whose text changed,
keeps its keys and mouse behaviour, processes coming and going lay nothing out again, and a panel whose lines
read the same is not repainted."""

from __future__ import annotations

import pytest
from msgspec.structs import replace
from textual.geometry import Region

from hwtop.tui.app import HwtopApp
from hwtop.widgets.processes import ProcessTable
from tests.factories import ScriptedSource, host_snapshot


async def started(app: HwtopApp, pilot) -> None:
    await app.first_frame.wait()
    await pilot.pause()


def spy_refresh(monkeypatch, widget) -> list[tuple[Region, ...]]:
    """The regions each `refresh` of `widget` asked for; () for the whole widget."""
    calls: list[tuple[Region, ...]] = []
    original = widget.refresh

    def recording(*regions, **kwargs):
        calls.append(regions)
        return original(*regions, **kwargs)

    monkeypatch.setattr(widget, "refresh", recording)
    return calls


async def test_a_tick_repaints_only_the_rows_whose_text_changed(monkeypatch) -> None:
    base = host_snapshot()
    app = HwtopApp(ScriptedSource([base]))
    async with app.run_test(size=(120, 40)) as pilot:
        await started(app, pilot)
        table = app.main.process_table
        calls = spy_refresh(monkeypatch, table)
        below_precision = tuple(replace(p, cpu_percent=p.cpu_percent + 0.01) if p.pid == 812 else p
                                for p in base.processes)
        table.show(below_precision, base.gpus)
        assert calls == []  # 0.3 % and 0.31 % both read "0.3": nothing to repaint
        visible_change = tuple(replace(p, threads=7) if p.pid == 812 else p for p in base.processes)
        table.show(visible_change, base.gpus)
        assert len(calls) == 1 and len(calls[0]) == 1 and calls[0][0].height == 1  # one line: sshd's row


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_arrows_move_the_cursor_and_a_row_click_selects_it() -> None:
    app = HwtopApp(ScriptedSource([host_snapshot()]))
    async with app.run_test(size=(120, 40)) as pilot:
        await started(app, pilot)
        table = app.query_one(ProcessTable)
        assert table.cursor_row == 0
        await pilot.press("down", "down")
        assert table.cursor_row == 2
        await pilot.press("up")
        assert table.cursor_row == 1
        await pilot.click(ProcessTable, offset=(3, 2))  # the border, the header, then row 0
        assert table.cursor_row == 0


async def test_the_selection_follows_its_pid_when_the_order_changes() -> None:
    base = host_snapshot()
    app = HwtopApp(ScriptedSource([base]))
    async with app.run_test(size=(120, 40)) as pilot:
        await started(app, pilot)
        table = app.main.process_table
        table.move_cursor(row=2)
        assert table.rows_shown[2].pid == 812
        busy = tuple(replace(p, cpu_percent=100.0) if p.pid == 812 else p for p in base.processes)
        table.show(busy, base.gpus)
        assert table.rows_shown[0].pid == 812 and table.cursor_row == 0


async def test_a_click_on_a_column_label_sorts_by_it() -> None:
    app = HwtopApp(ScriptedSource([host_snapshot()]))
    async with app.run_test(size=(120, 40)) as pilot:
        await started(app, pilot)
        table = app.main.process_table
        await pilot.click(ProcessTable, offset=(2, 1))  # inside the border: the header's first column, PID
        await pilot.pause()
        assert table.sort_key == "pid"
        assert [r.pid for r in table.rows_shown] == [812, 41000, 41010]


async def test_a_panel_whose_lines_read_the_same_is_not_repainted(monkeypatch) -> None:
    snapshot = host_snapshot()
    app = HwtopApp(ScriptedSource([snapshot]))
    async with app.run_test(size=(120, 40)) as pilot:
        await started(app, pilot)
        panel = app.main.panels["memory"]
        calls = spy_refresh(monkeypatch, panel)
        panel.show(panel.memory, panel.numa, panel.history)
        assert calls == []
        assert panel.memory is not None
        grown = replace(panel.memory, available_bytes=panel.memory.available_bytes // 2)
        panel.show(grown, panel.numa, panel.history)
        assert len(calls) == 1


def processes_like(base, count: int):
    """`count` processes shaped like the snapshot's first (distinct pids, the same width of every cell)."""
    first = base.processes[0]
    return tuple(replace(first, pid=70000 + i) for i in range(count))


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_processes_coming_and_going_cost_no_layout_pass_of_the_screen(monkeypatch) -> None:
    """The table's height is the screen's (1fr), not its rows': a process more or less changes what scrolls, not
    where anything is, so no layout pass of the whole screen; the scrollbar still tells the new length, the end
    of the list is still reachable, and a scrollbar that must appear or go still gets its pass."""
    base = host_snapshot()
    source = ScriptedSource([base])
    app = HwtopApp(source, interval=3600.0)  # no tick of its own meanwhile

    async def tick(count: int) -> None:
        source.snapshots[-1] = replace(base, processes=processes_like(base, count))
        app.show(app.session.tick())
        for _ in range(100):  # until the table has taken the rows in (a loaded box takes more than one pause)
            await pilot.pause()
            if table.virtual_size.height == count + 1:
                break

    async with app.run_test(size=(120, 40)) as pilot:
        await started(app, pilot)
        table = app.main.process_table
        layouts: list[str] = []
        original = type(table).refresh

        def recording(widget, *regions, layout=False, **kwargs):
            if layout and widget is table:
                layouts.append("table")
            return original(widget, *regions, layout=layout, **kwargs)

        monkeypatch.setattr(type(table), "refresh", recording)
        await tick(45)  # from a few rows to a scrolling list: a pass (the table holds 60 at the most)
        passes = len(layouts)
        assert passes >= 1 and table.show_vertical_scrollbar
        for count in (55, 38, 58):  # scrolls before and after: none
            await tick(count)
            assert table.virtual_size.height == count + 1  # + the header
            assert table.vertical_scrollbar.window_virtual_size == count + 1
        assert len(layouts) == passes
        table.scroll_end(animate=False)
        await pilot.pause()
        assert table.scroll_offset.y == table.max_scroll_y == 59 - table.container_size.height
        await tick(34)  # fewer: the scroll position comes back within range
        assert table.scroll_offset.y == table.max_scroll_y == 35 - table.container_size.height
        await tick(5)  # fits: the scrollbar goes, with a pass
        assert len(layouts) > passes and not table.show_vertical_scrollbar
        assert "70004" in "".join(table.render_line(y).text for y in range(7))
        passes = len(layouts)
        await tick(8)  # fits before and after (an idle box's few processes): none, and the new rows are drawn
        assert len(layouts) == passes and "70007" in "".join(table.render_line(y).text for y in range(10))


async def test_the_cpu_sorted_table_starts_at_the_top_when_busier_processes_appear() -> None:
    """Issue 48: after `w` started a job, its eight busy processes sorted above the pid the cursor happened to be
    on; the cursor followed that pid down and the table scrolled past the busiest. Until a user puts the cursor on
    a row it stays on the top one, and the view at the top."""
    from hwtop.model.snapshot import ProcessInfo

    base = host_snapshot()
    app = HwtopApp(ScriptedSource([base]), interval=3600.0)  # no tick of its own meanwhile
    async with app.run_test(size=(80, 24)) as pilot:
        await started(app, pilot)
        table = app.main.process_table
        first = table.rows_shown[0].pid
        ranks = tuple(ProcessInfo(61000 + i, 1, "trainer", "python", "python train.py", "R", 100.0 - i / 10,
                                  1 << 30, 86) for i in range(8))
        for _ in range(100):  # on a loaded box the app's own show of its first ticks may land after this one
            table.show(base.processes + ranks, base.gpus)
            await pilot.pause()
            if any(row.pid == 61000 for row in table.rows_shown):
                break
        assert [row.pid for row in table.rows_shown[:2]] == [61000, 61001] and first != 61000
        assert table.cursor_row == 0 and table.scroll_y == 0, (table.cursor_row, table.scroll_y)
        table.show(base.processes + ranks[:4], base.gpus)  # some go; the panels resize
        await pilot.resize_terminal(120, 40)
        await pilot.pause()
        busiest = max(row.cpu or 0.0 for row in table.rows_shown)
        assert table.cursor_row == 0 and table.scroll_y == 0 and table.rows_shown[0].cpu == busiest


async def test_a_row_is_one_segment_per_run_of_one_style() -> None:
    """Each segment costs the terminal a style change: the cells of a row that share a style are drawn as one."""
    app = HwtopApp(ScriptedSource([host_snapshot()]))
    async with app.run_test(size=(120, 40)) as pilot:
        await started(app, pilot)
        table = app.main.process_table
        assert table.row_count >= 2
        for y in range(table.row_count + 1):  # the header, the cursor's row and the others
            segments = list(table.render_line(y))
            assert all(a.style != b.style for a, b in zip(segments, segments[1:-1], strict=False)), y


async def test_a_process_that_goes_repaints_the_rows_below_it_not_the_table(monkeypatch) -> None:
    """A process count that changes (an idle box's short-lived processes come and go every few ticks) draws again
    the rows that moved and the one left empty at the end: not the header, nor the rows above the one that went."""
    base = host_snapshot()
    app = HwtopApp(ScriptedSource([base]), interval=3600.0)  # no tick of its own meanwhile
    async with app.run_test(size=(120, 40)) as pilot:
        await started(app, pilot)
        table = app.main.process_table
        shown = list(table.rows_shown)
        assert len(shown) >= 3
        calls = spy_refresh(monkeypatch, table)
        last = shown[-1].pid  # the least busy: the bottom row
        table.show(tuple(p for p in base.processes if p.pid != last), base.gpus)
        assert len(calls) == 1 and [region.y for region in calls[0]] == [len(shown)]  # the emptied row (+1: header)
        table.show(base.processes, base.gpus)  # it comes back: its row only
        assert len(calls) == 2 and [region.y for region in calls[1]] == [len(shown)]
        second = shown[1].pid  # one in the middle goes: the rows from it down move up
        table.show(tuple(p for p in base.processes if p.pid != second), base.gpus)
        assert len(calls) == 3 and [region.y for region in calls[2]] == list(range(2, len(shown) + 1))


def test_a_plain_cell_is_drawn_as_the_general_path_draws_it() -> None:
    """Cells without spans that fit (most of a process row) are built as one piece directly: the same text and
    style as the general path (aligned, the base style a span over the cell, rendered by Rich)."""
    from rich.console import Console
    from rich.style import Style
    from rich.text import Text

    from hwtop.widgets.line_table import _cell_pieces, _plain_cell

    console = Console()
    cells = [Text("812"), Text("0.3", style="bold red", justify="right"), Text("5.0M", justify="right"),
             Text("sshd", justify="center"), Text("top", style=Style(color="green"), justify="center"),
             Text(""), Text("", style="dim"), Text("漢字", justify="right"), Text("exactly10!", style="italic"),
             Text("default", justify="default")]
    for value in cells:
        for width in (value.cell_len, value.cell_len + 1, value.cell_len + 6):
            if width:
                assert [_plain_cell(console, value, width)] == _cell_pieces(console, value, width), (value, width)


async def test_rows_that_scroll_the_table_draw_every_line_again() -> None:
    """A cursor given with new rows that scrolls the table (a selected pid that moved far down) shows the rows it
    scrolled to, header kept, on the screen Textual draws: no line is left as it was before the scroll."""
    from textual.app import App, ComposeResult

    from hwtop.tui.textual_compat import screen_strips
    from hwtop.widgets.line_table import LineTable

    class Table(App[None]):
        CSS = "LineTable { height: 10; }"

        def compose(self) -> ComposeResult:
            yield LineTable(["pid", "name"])

    app = Table()
    async with app.run_test(size=(40, 20)) as pilot:
        table = app.query_one(LineTable)
        table.set_rows(list(range(50)), [[i, f"p{i}"] for i in range(50)])
        await pilot.pause()
        table.set_rows(list(range(50)), [[i, f"p{i}"] for i in range(50)], cursor=30)
        await pilot.pause()
        top = int(table.scroll_offset.y)
        assert top > 0
        lines = [strip.text.split()[:2] for strip in screen_strips(app.screen)[:10]]  # not the scrollbar
        assert lines[0] == ["pid", "name"]
        assert lines[1:] == [[str(i), f"p{i}"] for i in range(top, top + 9)]
