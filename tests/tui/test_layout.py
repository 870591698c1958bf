"""The main screen's row budget (tui/layout.py) at the sizes users run it: 80x24, 100x30, 120x40, 200x60, with
and without a workload pane, on an eight-GPU box (the wants are those of the dgx-a100 demo's panels)."""

from __future__ import annotations

import pytest
from msgspec.structs import replace

from hwtop.tui.layout import BARS, Rows, Shown, rows
from hwtop.widgets.panel import FRAME, Want
from hwtop.widgets.processes import LEAST as PROCESS_LEAST

SIZES = ((80, 24), (100, 30), (120, 40), (200, 60))
FOLDED_RANKS = Want(2, 2, 2)  # eight ranks alike: the status line and `rank 0-7 x8`
DISTINCT_RANKS = Want(9, 9, 2)  # eight ranks, each its own line
WORKLOADS = {"none": None, "alike": FOLDED_RANKS, "distinct": DISTINCT_RANKS}


NO_FINDING = Want.fixed(1, 0)  # the advice pane's one borderless line
THIRTEEN_DISKS = Want(13, 3, 1)


TABLE = Want(PROCESS_LEAST, PROCESS_LEAST, PROCESS_LEAST, frame=0)  # the process table's own


def eight_gpus(size: tuple[int, int], workload: Want | None, advice: Want = NO_FINDING,
               disks: Want = THIRTEEN_DISKS) -> Shown:
    width, height = size
    cells = -(-8 // ((width - 4) // 34))  # widgets/gpu.py's short cells, side by side
    wants = {"cpu": Want(17, 5, 1), "disks": disks, "memory": Want(4, 2, 1),
             "gpu": Want(24, 8, 1, steps=(24, 16, 8, cells, 1)), "workload": workload, "advice": advice,
             "processes": TABLE}
    return Shown(width, height, {name: want for name, want in wants.items() if want is not None})


def wanting(shown: Shown, height: int | None = None, filter: bool = False, **wants: Want | None) -> Shown:
    """`shown` with some wants changed (None: that panel left out)."""
    changed = {**shown.wants, **wants}
    return replace(shown, height=height or shown.height, filter=filter,
                   wants={name: want for name, want in changed.items() if want is not None})


def screen_rows(got: Rows, shown: Shown) -> int:
    """Every row the screen draws: bars, top row, GPU, workload and advice panes, process table."""
    workload = got["workload"] + FRAME if got["workload"] else 0
    advice = got["advice"] + (shown.wants["advice"].frame if "advice" in shown.wants else 0)
    return BARS + got.top + got["gpu"] + FRAME + workload + advice + got["processes"]


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("workload", sorted(WORKLOADS))
def test_everything_fits_the_screen_with_the_gpu_summary_and_three_processes(size, workload) -> None:
    shown = eight_gpus(size, WORKLOADS[workload])
    got = rows(shown)
    assert screen_rows(got, shown) == size[1]  # the process table takes the rest: nothing below the screen
    assert got["processes"] >= PROCESS_LEAST and got["gpu"] >= 1 and got["cpu"] >= 1 and got["disks"] >= 1
    assert got.top == max(got["cpu"] + got["disks"] + 2 * FRAME, got["memory"] + FRAME)


@pytest.mark.parametrize(("size", "workload", "expected"), [
    # 80x24: the GPUs in short cells side by side (4 lines); with a workload pane, in one summary line
    ((80, 24), "none", Rows.of(cpu=1, disks=4, memory=4, gpu=4, advice=1, processes=6, top=9)),
    ((80, 24), "alike", Rows.of(cpu=1, disks=3, memory=4, gpu=1, workload=2, advice=1, processes=6, top=8)),
    ((80, 24), "distinct", Rows.of(cpu=1, disks=1, memory=4, gpu=1, workload=4, advice=1, processes=6, top=6)),
    # 120x40: a line a GPU; the CPU a heat strip; the table a quarter of the screen unless the ranks need it
    ((120, 40), "none", Rows.of(cpu=5, disks=8, memory=4, gpu=8, advice=1, processes=10, top=17)),
    ((120, 40), "alike", Rows.of(cpu=5, disks=4, memory=4, gpu=8, workload=2, advice=1, processes=10, top=13)),
    ((120, 40), "distinct", Rows.of(cpu=5, disks=1, memory=4, gpu=8, workload=9, advice=1, processes=6, top=10)),
    # 200x60: three lines a GPU, two GPUs side by side
    ((200, 60), "none", Rows.of(cpu=5, disks=7, memory=4, gpu=24, advice=1, processes=15, top=16)),
    ((200, 60), "alike", Rows.of(cpu=5, disks=3, memory=4, gpu=24, workload=2, advice=1, processes=15, top=12)),
    ((200, 60), "distinct", Rows.of(cpu=5, disks=4, memory=4, gpu=16, workload=9, advice=1, processes=15, top=13)),
])
def test_rows_per_panel(size, workload, expected) -> None:
    assert rows(eight_gpus(size, WORKLOADS[workload])) == expected


def test_panels_fold_before_any_goes_to_its_least() -> None:
    """At 100x30 with eight distinct ranks: the disks and the CPU fold and then go to a line, and the ranks give
    way to three lines, before the GPU panel leaves its line a GPU."""
    got = rows(eight_gpus((100, 30), DISTINCT_RANKS))
    assert got["gpu"] == 8 and got["workload"] == 3 and got["cpu"] == 1 and got["disks"] == 1


def test_the_advice_pane_gives_way_to_headlines_before_the_gpus_fold_to_cells() -> None:
    """Five findings, one open (12 lines drawn in full, one headline each at the fold)."""
    got = rows(eight_gpus((120, 40), None, advice=Want(12, 5, 1)))
    assert got["gpu"] == 8 and 5 <= got["advice"] < 12


def test_the_process_table_keeps_a_quarter_of_a_tall_screen() -> None:
    got = rows(eight_gpus((200, 60), None))
    assert got["processes"] == 60 // 4


def test_a_hidden_panel_takes_no_row_and_the_filter_line_takes_one() -> None:
    shown = eight_gpus((120, 40), None)
    without_disks = rows(wanting(shown, disks=None))
    assert without_disks["disks"] == 0 and \
        without_disks.top == max(without_disks["cpu"], without_disks["memory"]) + FRAME
    filtered = rows(wanting(shown, filter=True))
    assert screen_rows(filtered, shown) == 40 - 1


def test_a_tiny_terminal_gets_every_panel_at_its_least_and_the_table_the_rest() -> None:
    got = rows(eight_gpus((80, 16), FOLDED_RANKS))
    assert (got["cpu"], got["disks"], got["gpu"], got["workload"]) == (1, 1, 1, 2)
    assert got["processes"] == 16 - BARS - got.top - (1 + FRAME) - (2 + FRAME) - 1


def test_a_network_panel_folds_like_the_disks_and_may_be_left_out() -> None:
    shown = eight_gpus((80, 24), FOLDED_RANKS)
    with_network = rows(wanting(shown, network=Want(6, 2, 0)))
    assert with_network["processes"] >= PROCESS_LEAST and with_network["gpu"] == 1
    roomy = rows(wanting(shown, height=40, network=Want(6, 2, 0)))
    assert roomy["network"] >= 2


def test_want_steps_only_where_the_panel_has_them() -> None:
    gpu = Want(24, 8, 1, steps=(24, 16, 8, 4, 1))
    assert gpu.below(24, 8) == 16 and gpu.below(8, 8) is None and gpu.below(8, 1) == 4 and gpu.above(4) == 8
    lines = Want(13, 3, 1)
    assert lines.below(13, 3) == 12 and lines.below(3, 3) is None and lines.above(13) is None
