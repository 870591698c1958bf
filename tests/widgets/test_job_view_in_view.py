"""The job view of a 256-rank job (the big machine of benchmarks/): its ~350 lines are taller than the terminal, and
a tick builds only the rows in view; a row scrolled into view is built when it is drawn, from the same data, so the
screen reads as if every row had been built (widgets/job.py, `Later`)."""

from __future__ import annotations

import pytest
from msgspec.structs import replace
from textual.widget import Widget

from hwtop.demo.machine import demo_sampler
from hwtop.model.snapshot import Snapshot
from hwtop.session.session import Session
from hwtop.tui.app import HwtopApp
from hwtop.tui.job_screen import JobScreen
from hwtop.widgets.job import JobPanel
from tests.factories import SequenceSource
from tests.small_screen import screen_lines, started


def big_job_snapshots(ticks: int = 4) -> list[Snapshot]:
    clock = [100.0]
    session = Session(demo_sampler("dgx-a100:straggler-256", seed=7, clock=lambda: clock[0],
                                   wall=lambda: 1_800_000_000.0 + clock[0]))
    out = []
    try:
        for _ in range(ticks):
            out.append(session.tick().snapshot)
            clock[0] += 1.0
    finally:
        session.close()
    return out


def panel_rows(app: HwtopApp, panel: JobPanel) -> list[str]:
    """The panel's content rows on the terminal (inside its scroll's border and its padding), top to bottom."""
    scroll = panel.parent
    assert isinstance(scroll, Widget)
    left, width = panel.content_region.x, panel.content_size.width
    inside = screen_lines(app)[scroll.region.y + 1:scroll.region.bottom - 1]
    return [line[left:left + width].rstrip() for line in inside]


def every_row_built(panel: JobPanel, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The panel's lines with every row built, as before rows out of view were left for later."""
    with monkeypatch.context() as patch:
        patch.setattr(JobPanel, "_in_view", lambda self: lambda _: True)
        return [line.plain.rstrip() for line in panel.lines(panel.content_size.width)]


def contiguous_in(rows: list[str], lines: list[str]) -> bool:
    starts = [i for i, line in enumerate(lines) if line == rows[0]]
    return any(lines[i:i + len(rows)] == rows for i in starts)


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_a_tick_builds_the_rows_in_view_and_scrolling_draws_the_others_right(
        monkeypatch: pytest.MonkeyPatch) -> None:
    snapshots = big_job_snapshots()
    app = HwtopApp(SequenceSource(snapshots), interval=3600)
    built: list[int] = []
    row = JobPanel._row
    monkeypatch.setattr(JobPanel, "_row", lambda self, p, *args: built.append(p.pid) or row(self, p, *args))
    async with app.run_test(size=(200, 50)) as pilot:
        await started(app, pilot)
        await pilot.press("j")
        await pilot.pause()
        assert isinstance(app.screen, JobScreen)
        panel = app.screen.panel
        job = snapshots[-1].job
        assert job is not None and len(job.ranks) == 256 and len(job.processes) > 60
        app.show(app.session.tick())
        await pilot.pause()
        built.clear()
        app.show(app.session.tick())  # at the top the rank table fills the screen: no process row is in view
        await pilot.pause()
        assert built == []
        top = panel_rows(app, panel)
        assert len(top) > 40 and contiguous_in(top, every_row_built(panel, monkeypatch))

        await pilot.press("end")  # the process table comes into view: its rows are built as they are drawn
        await pilot.pause()
        bottom = panel_rows(app, panel)
        full = every_row_built(panel, monkeypatch)
        assert bottom != top and contiguous_in(bottom, full)
        last = full[panel._process_rows[-1]]
        assert last.startswith(f"{job.processes[-1].pid:>7} ") and last in bottom

        built.clear()
        app.show(app.session.tick())  # scrolled down, the next tick builds the process rows in view
        await pilot.pause()
        assert 0 < len(built) <= panel.scrollable_content_region.height + 2
        assert contiguous_in(panel_rows(app, panel), every_row_built(panel, monkeypatch))


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_a_row_out_of_view_shows_the_latest_data_when_scrolled_to_even_if_nothing_in_view_changed() -> None:
    """A tick that changes only rows out of view repaints nothing; those rows, scrolled into view, are drawn from
    that tick's data, not from the last tick that changed a row in view."""
    app = HwtopApp(SequenceSource(big_job_snapshots(2)), interval=3600)
    async with app.run_test(size=(200, 50)) as pilot:
        await started(app, pilot)
        await pilot.press("j")
        await pilot.pause()
        assert isinstance(app.screen, JobScreen)
        panel = app.screen.panel
        frame = app.session.tick()
        app.show(frame)
        await pilot.pause()
        top = panel_rows(app, panel)
        job = frame.snapshot.job
        assert job is not None
        last = job.processes[-1]
        assert last.cpu_percent != 77.0 and last.threads != 99
        moved = replace(job, processes=(*job.processes[:-1], replace(last, cpu_percent=77.0, threads=99)))
        app.show(replace(frame, snapshot=replace(frame.snapshot, job=moved)))  # only a row far below the screen
        await pilot.pause()
        assert panel_rows(app, panel) == top
        await pilot.press("end")
        await pilot.pause()
        row = next(line for line in panel_rows(app, panel) if line.startswith(f"{last.pid:>7} "))
        assert (row[38:43].strip(), row[52:56].strip()) == ("77", "99"), row  # CPU% and THR (widgets/job.COLUMNS)


def test_a_rank_s_placement_lines_follow_its_placement_and_the_node_maps() -> None:
    """A rank's placement lines are kept from tick to tick while they would read the same: where its threads ran,
    its memory's nodes and the CPU-to-node map each still move them."""
    from hwtop.model.job import JobProcess, JobSnapshot

    def shown(rank: JobProcess, node_of_cpu: dict[int, int]) -> str:
        panel.show(JobSnapshot("pid 500", (500,), "running", (rank,), 90.0, 1 << 30), {}, {0: 0}, node_of_cpu)
        return "\n".join(line.plain for line in panel.lines(200))

    panel = JobPanel()
    rank = JobProcess(500, 1, "python", "python train.py", "rank 0", 0, 0, "R", 90.0, 1 << 30, 8, (0, 1, 2, 3),
                      thread_cpus=(0, 1), gpus=((0, 1 << 30),), numa_pages=((0, 100),))
    nodes = {0: 0, 1: 0, 2: 1, 3: 1}
    assert "threads ran on 0-1 (node 0) of allowed 0-3 (node 0,1)" in shown(rank, nodes)
    assert "threads ran on 2-3 (node 1)" in shown(replace(rank, thread_cpus=(2, 3)), nodes)
    assert "memory n0 50% n1 50%" in shown(replace(rank, thread_cpus=(2, 3), numa_pages=((0, 50), (1, 50))), nodes)
    assert "threads ran on 2-3 (node 0)" in shown(replace(rank, thread_cpus=(2, 3), numa_pages=((0, 50), (1, 50))),
                                                   {cpu: 0 for cpu in range(4)})
