"""The job view (`j`) as a user sees it in the stories NCCL's RAS tells: the rank a finding names is marked ◀, on
the first row of the rank table, with what the mark means said, at 80x24 and 120x40; and no line of the table is
cut (issue 42's and issue 48's leftovers: the hung rank was not marked, the NCCL columns cut the table at 80); each
rank's STATE says what the findings read of it."""

from __future__ import annotations

import re

import pytest

from hwtop.demo.story import NCCL_STUCK_RANK, RANK_PID, STRAGGLER_RANK
from hwtop.model.verdict import SHORT
from hwtop.tui.job_screen import JobScreen
from hwtop.widgets.job_ranks import MARK, MARK_LABELS
from tests.small_screen import rank_cells, screen_lines, started
from tests.tui.screens import lived_through, story_snapshots

CASES = [("nccl-hang", 70.0, NCCL_STUCK_RANK, MARK_LABELS["collective-hang"], (80, 24)),
         pytest.param("straggler", 60.0, STRAGGLER_RANK, "straggler", (120, 40), marks=pytest.mark.slow)]


def inside(line: str) -> str:
    """A row of the job panel without its border (and the screen's scrollbar beside it)."""
    return line.split("│")[1].strip() if line.count("│") >= 2 else ""


@pytest.mark.parametrize(("story", "at", "rank", "label", "size"), CASES)
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_the_rank_a_finding_names_is_marked_first(story: str, at: float, rank: int, label: str,
                                                        size: tuple[int, int]) -> None:
    app = lived_through(story_snapshots(f"dgx-a100:{story}", seconds=at, step=5.0))
    async with app.run_test(size=size) as pilot:
        await started(app, pilot)
        await pilot.press("j")
        await pilot.pause()
        assert isinstance(app.screen, JobScreen)
        lines = [inside(line) for line in screen_lines(app)]
        header = next(i for i, line in enumerate(lines) if line.startswith("RANK "))
        first = lines[header + 1]
        assert first.startswith(f"◀{rank:>4} ") and f" {RANK_PID + rank} " in first, "\n".join(lines)
        assert not any(line.startswith("◀") for line in lines[header + 2:])  # one rank named, one mark
        assert any(f"◀ {label}" in line for line in lines[:header])  # what the mark says
        table = lines[:header + 1]  # the NCCL line, the legend and the column header: whole words only
        assert not any(line.endswith("…") for line in table), "\n".join(table)
        assert all(re.fullmatch(r"[A-Z]+(?: AT)?", word) for word in re.split(r" {1,}(?=[A-Z])", lines[header]))


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_the_hung_rank_reads_never_launched_in_state_as_the_finding_says(size: tuple[int, int]) -> None:
    """One voice: the STATE column says of each rank what the frame's verdicts say, the ones collective-hang read
    (rank 5 never launched the collective; the ranks here that launched it have not finished it)."""
    app = lived_through(story_snapshots("dgx-a100:nccl-hang", seconds=70.0, step=5.0))
    async with app.run_test(size=size) as pilot:
        await started(app, pilot)
        await pilot.press("j")
        await pilot.pause()
        assert isinstance(app.screen, JobScreen) and app.frame is not None
        assert any(f.id == "collective-hang" and f.title.startswith(f"Rank {NCCL_STUCK_RANK} ")
                   for f in app.frame.findings)
        lines = [inside(line) for line in screen_lines(app)]
        header = next(i for i, line in enumerate(lines) if line.startswith("RANK "))
        columns = lines[header].replace("BUSY AT", "BUSY_AT").split()
        assert columns[:2] == ["RANK", "STATE"], lines[header]
        rows = {}
        for line in lines[header + 1:]:
            cells = rank_cells(line.replace(MARK, " "))
            if not cells or not cells[0].isdigit():
                break
            rows[int(cells[0])] = cells[1]
        assert rows[NCCL_STUCK_RANK] == SHORT["before-collective"] == "never launched"
        assert set(rows) - {NCCL_STUCK_RANK} and {s for r, s in rows.items() if r != NCCL_STUCK_RANK} == {
            "not finished"}
        assert any("STATE: " in line for line in lines[:header])  # the legend says what it is
        assert not any(line.endswith("…") for line in lines[:header + 1]), "\n".join(lines[:header + 1])
        if "BUSY_AT" not in columns:  # no site to cut: a row ends with its last column's figure, whole
            assert not any(line.endswith("…") for line in lines[header + 1:header + 1 + len(rows)]), "\n".join(lines)
