"""The workload pane on an eight-GPU demo box at 80x24 and 100x30, in every story at the point that tells it: each
rank line on the screen fits the pane, every figure on it whole (a figure cut to `mem …` is a claim without its
value)."""

from __future__ import annotations

import re

import pytest

from hwtop.demo.story import STORIES
from tests.small_screen import screen_lines, started
from tests.tui.screens import lived_through, story_snapshots

# Each story played to where it shows what it is about: starving, stalled (no step time), a rank's memory climbing.
TOLD_AT = {"steady": 40.0, "starved": 30.0, "nccl-hang": 40.0, "oom": 50.0, "amp": 70.0, "thermal": 60.0,
           "straggler": 40.0, "nccl-ethernet": 60.0}
FIGURE = {"step": r"\d+|N/A", "wait": r"\d+%|N/A", "loss": r"-?\d+\.\d{3}|nan|inf|N/A",
          "mem": r"\d+(\.\d)?[BKMGTP]|N/A"}


def test_every_story_is_told() -> None:
    assert set(TOLD_AT) == {"steady", *STORIES}


def workload_pane(lines: list[str]) -> list[str]:
    """The rows inside the workload pane's border, read off the screen."""
    top = next(i for i, line in enumerate(lines) if "─ Workload" in line)
    bottom = next(i for i in range(top + 1, len(lines)) if lines[i].lstrip().startswith("╰"))
    return [line.strip().strip("│").strip() for line in lines[top + 1:bottom]]


@pytest.mark.parametrize("size", [(80, 24), (100, 30)])
@pytest.mark.parametrize("story", sorted(TOLD_AT))
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
            assert re.search(r"(\d+\.\d|N/A) ?ms", line), line  # the step time, always
            for label, figure in FIGURE.items():
                found = re.search(rf" {label} +(\S+)", line)
                assert found is None or re.fullmatch(figure, found.group(1)), (label, line)
            assert " mem " in line, line  # memory gives way late: there is room for it from 80 columns
