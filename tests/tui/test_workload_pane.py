"""The workload pane on an eight-GPU demo box at 80x24 and 100x30, in every story at the point that tells it: each
rank line on the screen fits the pane, every figure on it whole (a figure cut to `mem …` is a claim without its
value)."""

from __future__ import annotations

import re

import pytest

from hwtop.demo.story import STORIES
from tests.matrix import fast_few
from tests.small_screen import screen_lines, started
from tests.tui.screens import lived_through, story_snapshots

# Each story played to where it shows what it is about: starving, stalled (no step time), a rank's memory climbing.
TOLD_AT = {"steady": 40.0, "starved": 30.0, "nccl-hang": 40.0, "oom": 50.0, "amp": 70.0, "thermal": 60.0,
           "straggler": 40.0, "nccl-ethernet": 60.0}
FIGURE = {"step": r"\d+|N/A", "data": r"\d+%|N/A", "coll": r"\d+%|N/A", "loss": r"-?\d+\.\d{3}|nan|inf|N/A",
          "mem": r"\d+(\.\d)?[BKMGTP]|N/A"}


def test_every_story_is_told() -> None:
    assert set(TOLD_AT) == {"steady", *STORIES}


def workload_pane(lines: list[str]) -> list[str]:
    """The rows inside the workload pane's border, read off the screen."""
    top = next(i for i, line in enumerate(lines) if "─ Workload" in line)
    bottom = next(i for i in range(top + 1, len(lines)) if lines[i].lstrip().startswith("╰"))
    return [line.strip().strip("│").strip() for line in lines[top + 1:bottom]]


@pytest.mark.parametrize("size", fast_few([(80, 24), (100, 30)], lambda size: size == (80, 24)))
@pytest.mark.parametrize("story", sorted(TOLD_AT))
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_each_rank_line_shows_every_figure_whole(story: str, size: tuple[int, int]) -> None:
    spec = "dgx-a100" if story == "steady" else f"dgx-a100:{story}"
    app = lived_through(story_snapshots(spec, seconds=TOLD_AT[story], step=5.0))
    async with app.run_test(size=size) as pilot:
        await started(app, pilot)
        pane = workload_pane(screen_lines(app))
        ranks = [line for line in pane if line.startswith("rank ")]
        assert ranks, "\n".join(pane)
        for line in ranks:
            assert "…" not in line, line
            assert re.search(r"\d+\.\d ?ms|N/A", line), line  # the step time, always
            assert "N/Ams" not in line and "N/A/s" not in line, line  # N/A takes no unit
            for label, figure in FIGURE.items():
                found = re.search(rf" {label}(?: wait)? +(\S+)", line)
                assert found is None or re.fullmatch(figure, found.group(1)), (label, line)
            assert " mem " in line, line  # memory gives way late: there is room for it from 80 columns


async def test_two_ranks_apart_on_eight_gpus_at_80x24_show_one_and_count_the_other() -> None:
    """With the process filter's line open the budget leaves the pane its least, two rows: one rank's line, the
    other counted on the status line."""
    from msgspec.structs import replace

    from hwtop.model.workload import WorkloadState
    from hwtop.widgets.format import human_bytes
    from tests.widgets.test_workload import rank

    ranks = (rank(0, step_time=0.068, samples=235.2), rank(1, step_time=0.074, samples=216.3))
    job = WorkloadState("balanced", "running", None, ranks, "rank 0 started: batch size 16")
    snapshots = story_snapshots("dgx-a100", seconds=10, step=5.0)
    app = lived_through([*snapshots[:-1], replace(snapshots[-1], workload=job)])
    async with app.run_test(size=(80, 24)) as pilot:
        await started(app, pilot)
        await pilot.press("slash")
        await pilot.pause()
        pane = workload_pane(screen_lines(app))
        assert app.main.rows["workload"] == 2
        assert pane == ["RUNNING  last: rank 0 started: batch size 16  +1 more rank(s)",
                        # its wait in collectives is the demo job's rank 0 (pid 41000, its stack figures)
                        "rank 0 step   129    68.0ms    235.2/s data   0% coll  12% mem  30.5G"], pane
        table = next(row for row in app.main.process_table.rows_shown if row.pid == ranks[0].pid)
        assert table.gpu_memory is not None and human_bytes(table.gpu_memory) == "30.5G"  # the table's GPU MEM
