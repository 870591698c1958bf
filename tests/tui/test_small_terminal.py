"""What a new user sees on an 80x24 terminal: the help scrolls, the job view fits the width, a command
line with a newline stays on one row."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from msgspec.structs import replace
from textual.containers import VerticalScroll
from textual.pilot import Pilot

from hwtop.model.snapshot import ProcessInfo, Snapshot
from hwtop.tui.app import HwtopApp
from hwtop.tui.help import KEYS, HelpScreen
from hwtop.tui.job_screen import JobScreen
from hwtop.widgets import palette
from hwtop.widgets.cpu import CpuPanel, cpu_legend
from tests.factories import ScriptedSource, host_snapshot
from tests.small_screen import NEWLINE_COMMAND, job_snapshot, screen_lines, started


@pytest.mark.slow  # a long Pilot session (several screens, live ticks): the slow step runs it
async def test_help_at_80x24_scrolls_to_its_last_key() -> None:
    app = HwtopApp(ScriptedSource([host_snapshot()]))
    async with app.run_test(size=(80, 24)) as pilot:
        await started(app, pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        last_key, last_text = KEYS[-1]
        assert not any(last_text[:30] in line for line in screen_lines(app))  # below the fold at first
        scroll = app.screen.query_one(VerticalScroll)
        assert scroll.has_focus and scroll.max_scroll_y > 0
        await pilot.press("end")
        await pilot.pause()
        lines = screen_lines(app)
        assert any(last_text[:30] in line for line in lines), "\n".join(lines)
        # A wrapped description continues under the description, not under the key column.
        wrapped = [line for line in lines if "click any column header" in line]
        assert not wrapped or wrapped[0].index("click") > 10
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


@asynccontextmanager
async def job_view(snapshot: Snapshot) -> AsyncIterator[tuple[HwtopApp, Pilot[None]]]:
    """An 80x24 app on `snapshot`, its job view opened with `j`."""
    app = HwtopApp(ScriptedSource([snapshot]))
    async with app.run_test(size=(80, 24)) as pilot:
        await started(app, pilot)
        await pilot.press("j")
        await pilot.pause()
        yield app, pilot


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_job_view_at_80x24_fits_the_width_and_keeps_the_last_child_on_view() -> None:
    snapshot = job_snapshot(workers=3)
    async with job_view(snapshot) as (app, _pilot):
        assert isinstance(app.screen, JobScreen)
        panel = app.screen.panel
        width = panel.content_size.width
        lines = panel.cached_lines(width)
        table = [line for line in lines if line.plain.lstrip().startswith(("PID", "5000", "5001"))]
        assert len(table) == 1 + len(snapshot.job.processes)  # type: ignore[union-attr]
        assert all(line.cell_len <= width for line in table), [line.plain for line in table if line.cell_len > width]
        shown = "\n".join(screen_lines(app))
        last = snapshot.job.processes[-1]  # type: ignore[union-attr]
        assert str(last.pid) in shown, shown
        assert "COMMAND" in shown
        wide = [line.plain for line in panel.lines(200) if line.plain.lstrip().startswith(str(last.pid))]
        assert len(wide) == 1 and "first line␊second line" in wide[0]  # the newline shown, on the same row


async def test_a_command_line_with_a_newline_keeps_its_process_row_on_one_line() -> None:
    base = host_snapshot()
    odd = ProcessInfo(41020, 41000, "alice", "python", NEWLINE_COMMAND, "S", 50.0, 1 << 30, 2, None)
    app = HwtopApp(ScriptedSource([replace(base, processes=(*base.processes, odd))]))
    async with app.run_test(size=(80, 24)) as pilot:
        await started(app, pilot)
        lines = screen_lines(app)
        rows = [line for line in lines if "41020" in line]
        assert len(rows) == 1 and not any("second line" in line and "41020" not in line for line in lines)


async def test_cpu_bars_split_user_system_and_iowait_with_a_legend() -> None:
    base = host_snapshot()
    cpu = base.cpu
    assert cpu is not None
    waiting = replace(cpu.cores[0], percent=30.0, user=20.0, system=10.0, iowait=40.0)
    snapshot = replace(base, cpu=replace(cpu, cores=(waiting, *cpu.cores[1:])))
    app = HwtopApp(ScriptedSource([snapshot]))
    async with app.run_test(size=(80, 24)) as pilot:
        await started(app, pilot)
        panel = app.main.panels["cpu"]
        legend = cpu_legend(snapshot.cpu)
        assert "user" in legend.plain and "system" in legend.plain and "▒iowait (not in %)" in legend.plain
        styles = [(legend.plain[span.start:span.end].strip(), str(span.style)) for span in legend.spans]
        assert styles == [("█", palette.USER), ("█", palette.SYSTEM), ("▒", palette.IOWAIT)]
        lines = panel.cached_lines(panel.content_size.width)
        assert len(lines) == 2  # the summary stays on one line
        line = next(line for line in lines if line.plain.startswith("  0 "))
        bar_text = line.plain
        assert "▒" in bar_text and bar_text.index("█") < bar_text.index("▒")  # busy first, then waiting
        assert bar_text.split("   1 ")[0].rstrip().endswith(" 30%")  # the number is busy time only
        drawn = {line.plain[span.start:span.end][0]: str(span.style) for span in line.spans if span.end > span.start}
        assert drawn["▒"] == palette.IOWAIT
        assert any("▒" in row and "iowait (not in %)" in row for row in screen_lines(app)), screen_lines(app)[:6]


@pytest.mark.slow  # the real app three times, a process tree started here
def test_small_terminal_screenshots_show_help_job_and_a_one_line_newline_command(monkeypatch, tmp_path) -> None:
    import asyncio
    import html

    from screenshots import small_terminal

    monkeypatch.setattr(small_terminal, "HERE", str(tmp_path))
    paths = asyncio.run(small_terminal.capture_all())
    assert [os.path.basename(p) for p in paths] == ["help-80x24.svg", "job-80x24.svg", "processes-newline-80x24.svg"]
    texts = [html.unescape(open(p, encoding="utf-8").read()).replace("\xa0", " ") for p in paths]
    assert "hwtop keys" in texts[0] and "escape closes" in texts[0]
    assert "COMMAND" in texts[1] and texts[1].count("python3 -c #␊impor") == 3  # the parent and both children
    assert texts[2].count("python3 -c #␊import") == 3 and "second" not in texts[2]


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_a_job_taller_than_the_terminal_scrolls_to_the_selected_row() -> None:
    snapshot = job_snapshot(workers=30)
    async with job_view(snapshot) as (app, pilot):
        last = snapshot.job.processes[-1]  # type: ignore[union-attr]
        assert not any(f" {last.pid} " in line for line in screen_lines(app))  # below the fold
        await pilot.press("up")  # from the first row round to the last child
        await pilot.pause()
        assert app.screen.panel.selected == last  # type: ignore[attr-defined]
        assert any(f" {last.pid} " in line for line in screen_lines(app)), "\n".join(screen_lines(app))
        await pilot.press("down")  # and back round to the top
        await pilot.pause()
        assert any("PID ROLE" in line for line in screen_lines(app))


def test_the_cpu_legend_shortens_to_fit_and_keeps_every_part() -> None:
    base = host_snapshot().cpu
    assert base is not None
    cores = tuple(replace(core, irq=2.0, steal=1.0) for core in base.cores)
    cpu = replace(base, cores=cores)
    full = cpu_legend(cpu).plain
    assert full == "█user █system █irq █steal ▒iowait (not in %)"
    short = cpu_legend(cpu, width=38).plain
    assert short == "█usr █sys █irq █stl ▒io≠%" and len(short) <= 38


def test_steal_once_seen_stays_in_the_legend() -> None:
    """A VM's steal flickers about 0.5 %: a legend that followed it would redraw the whole CPU panel every other
    tick. Once a part was shown, it stays."""
    base = host_snapshot().cpu
    assert base is not None
    stolen = replace(base, cores=tuple(replace(c, steal=0.7) for c in base.cores))
    quiet = replace(base, cores=tuple(replace(c, steal=0.2, irq=0.0) for c in base.cores))
    assert "steal" not in cpu_legend(quiet).plain
    assert "steal" in cpu_legend(quiet, seen={"steal"}).plain and "irq" not in cpu_legend(quiet, seen={"steal"}).plain
    panel = CpuPanel()
    panel.show(stolen, None, ())
    panel.show(quiet, None, ())
    assert "steal" in str(panel.border_subtitle)
