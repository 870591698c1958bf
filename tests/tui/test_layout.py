"""The main screen's row budget (tui/layout.py) at the sizes users run it: 80x24, 120x40, 200x60, with and
without a workload pane and a focused job."""

from __future__ import annotations

import pytest

from hwtop.tui.layout import BARS, FRAME, USEFUL_PROCESS_ROWS, Rows, Shown, rows

SIZES = ((80, 24), (120, 40), (200, 60))
RANKS = 8  # the workload pane of an eight-rank job: a line a rank


def shown(size: tuple[int, int], workload: bool, job: bool, top_rows: int = 9) -> Shown:
    width, height = size
    return Shown(width=width, height=height, workload_lines=RANKS if workload else None, advice_lines=1,
                 disks=3, job=job, top_rows=top_rows)


@pytest.mark.parametrize(("size", "workload", "expected"), [
    ((80, 24), False, Rows(workload=0, advice=1, disks=5, cpu_lines=7, gpu_lines=3)),
    ((80, 24), True, Rows(workload=10, advice=1, disks=5, cpu_lines=2, gpu_lines=1)),
    ((120, 40), False, Rows(workload=0, advice=1, disks=5, cpu_lines=23, gpu_lines=19)),
    ((120, 40), True, Rows(workload=10, advice=1, disks=5, cpu_lines=13, gpu_lines=9)),
    ((200, 60), False, Rows(workload=0, advice=1, disks=5, cpu_lines=43, gpu_lines=39)),
    ((200, 60), True, Rows(workload=10, advice=1, disks=5, cpu_lines=33, gpu_lines=29)),
])
@pytest.mark.parametrize("job", [False, True])
def test_rows_per_panel_at_each_size(size: tuple[int, int], workload: bool, job: bool, expected: Rows) -> None:
    """A focused job is shown on its own screen (j): it takes no row of the main screen."""
    assert rows(shown(size, workload, job)) == expected


@pytest.mark.parametrize("size", SIZES[1:])
@pytest.mark.parametrize("workload", [False, True])
def test_the_process_table_keeps_its_rows_where_there_is_room(size: tuple[int, int], workload: bool) -> None:
    got = rows(shown(size, workload, job=False))
    used = BARS + 9 + got.gpu_lines + FRAME + got.workload + got.advice
    assert used + USEFUL_PROCESS_ROWS == size[1]


def test_a_longer_workload_pane_takes_its_rows_from_the_gpu_and_cpu_panels() -> None:
    short, tall = rows(shown((120, 40), True, False)), rows(Shown(120, 40, workload_lines=12, disks=3, top_rows=9))
    assert tall.workload - short.workload == 4
    assert short.gpu_lines - tall.gpu_lines == 4 and short.cpu_lines - tall.cpu_lines == 4


def test_before_the_first_layout_the_top_row_is_taken_as_seven_rows() -> None:
    assert rows(shown((120, 40), False, False, top_rows=0)) == rows(shown((120, 40), False, False, top_rows=7))
