"""The main screen at 80x24, as a user first sees it: on every demo story of an eight-GPU box it opens unscrolled,
the header, the GPU summary and at least three processes on it; the keys that belong to it stay there."""

from __future__ import annotations

import pytest

from hwtop.tui.app import NO_FINDINGS, HwtopApp
from tests.factories import ScriptedSource, demo_snapshots, host_snapshot, with_demo_topology
from tests.matrix import fast_few
from tests.small_screen import job_snapshot, screen_lines, started
from tests.tui.screens import STORIES, lived_through, process_rows, story_snapshots


@pytest.mark.parametrize("spec", fast_few(["dgx-a100", *(f"dgx-a100:{story}" for story in STORIES)],
                                          lambda spec: spec in ("dgx-a100", "dgx-a100:nccl-hang")))
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_eight_gpus_at_80x24_open_unscrolled_with_the_gpu_summary_and_three_processes(spec: str) -> None:
    app = lived_through(story_snapshots(spec))
    async with app.run_test(size=(80, 24)) as pilot:
        await started(app, pilot)
        await pilot.pause()
        lines = screen_lines(app)
        assert lines[0].startswith(" hwtop  dgx-a100-demo"), lines[0]
        assert app.main.scroll_offset.y == 0 and app.main.max_scroll_y == 0  # nothing below the screen
        assert any("8× A100-SXM4-80GB util" in line or "GPU0" in line for line in lines[:20]), "\n".join(lines)
        assert process_rows(lines) >= 3, "\n".join(lines)
        assert "Quit" in lines[-1]
        if spec == "dgx-a100":  # the story's eight ranks read alike: one line
            assert any("rank 0-7 x8" in line for line in lines), "\n".join(lines)


@pytest.mark.parametrize("size", [(80, 24), (100, 30), (120, 40), (200, 60)])
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_a_resize_lays_the_screen_out_again(size: tuple[int, int]) -> None:
    app = lived_through(story_snapshots("dgx-a100:starved"))
    async with app.run_test(size=(200, 60)) as pilot:
        await started(app, pilot)
        await pilot.resize_terminal(*size)
        await pilot.pause(0.2)
        lines = screen_lines(app)
        assert app.main.max_scroll_y == 0 and process_rows(lines) >= 3, "\n".join(lines)


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_s_on_the_topology_screen_leaves_the_process_order_alone() -> None:
    app = HwtopApp(ScriptedSource(with_demo_topology(demo_snapshots("dgx-a100"), "dgx-a100")))
    async with app.run_test(size=(80, 24)) as pilot:
        await started(app, pilot)
        await pilot.press("t")
        await pilot.pause()
        await pilot.press("s", "r", "T")
        await pilot.pause()
        table = app.main.process_table
        assert (table.sort_key, table.sort_reversed, table.tree_view) == ("cpu", False, False)
        assert "Sort" not in screen_lines(app)[-1]  # the footer offers only what works here


@pytest.mark.parametrize("key", ["end", "pagedown", "down"])
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_the_topology_screen_scrolls_from_the_keyboard_at_80x24(key: str) -> None:
    app = HwtopApp(ScriptedSource(with_demo_topology(demo_snapshots("dgx-a100"), "dgx-a100")))
    async with app.run_test(size=(80, 24)) as pilot:
        await started(app, pilot)
        await pilot.press("t")
        await pilot.pause()
        scroll = app.topology_screen.query_one("VerticalScroll") if app.topology_screen else None
        assert scroll is not None and scroll.max_scroll_y > 0
        await pilot.press(key)
        await pilot.pause()
        assert scroll.scroll_y > 0
        if key == "end":
            assert scroll.scroll_y == scroll.max_scroll_y
            assert any("mlx5_3" in line and "200 Gb" in line for line in screen_lines(app))  # the NIC list's end
            await pilot.press("home")
            await pilot.pause()
            assert scroll.scroll_y == 0
        else:
            await pilot.press("pageup")
            await pilot.pause()
            assert scroll.scroll_y == 0


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_a_with_no_finding_says_so(monkeypatch) -> None:
    app = HwtopApp(ScriptedSource([host_snapshot()]))
    said: list[str] = []
    async with app.run_test(size=(80, 24)) as pilot:
        await started(app, pilot)
        monkeypatch.setattr(app, "notify", lambda message, **_: said.append(message))
        await pilot.press("a")
        await pilot.pause()
        assert said == [NO_FINDINGS] and app.screen is app.main


async def test_a_gpu_less_box_gives_the_command_the_gpu_columns_room() -> None:
    app = HwtopApp(ScriptedSource([host_snapshot()]))
    async with app.run_test(size=(80, 24)) as pilot:
        await started(app, pilot)
        lines = screen_lines(app)
        header = next(line for line in lines if " PID " in line)
        assert "GPU" not in header and header.index("COMMAND") < 40, header
        assert any("python train.py --epochs 90" in line for line in lines)


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (200, 60)])
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_a_focused_job_takes_no_row_of_the_main_screen(size: tuple[int, int]) -> None:
    """The job has its own view (j): the main screen's budget is the same with and without one."""
    budgets = []
    for snapshot in (host_snapshot(), job_snapshot()):
        app = HwtopApp(ScriptedSource([snapshot]))
        async with app.run_test(size=size) as pilot:
            await started(app, pilot)
            lines = screen_lines(app)
            assert lines[0].startswith(" hwtop ") and process_rows(lines) >= 3
            budgets.append(app.main.rows)
    assert budgets[0] == budgets[1]
