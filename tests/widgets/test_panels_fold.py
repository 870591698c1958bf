"""What the panels draw when the row budget gives them fewer lines than they could fill: the workload's ranks
folded, the CPU's heat strip with its `+N` mark, the memory panel's history under RAM, the disks summed up."""

from __future__ import annotations

from hwtop.model.snapshot import DiskSnapshot
from hwtop.model.workload import RankState, WorkloadState
from hwtop.widgets.cpu import CpuPanel
from hwtop.widgets.disks import DisksPanel
from hwtop.widgets.memory import MemoryPanel
from hwtop.widgets.workload import WorkloadPanel
from tests.factories import host_snapshot

WIDTH = 76  # a full-width panel's content at 80 columns


def rank(index: int, step: int | None = 10, step_time: float | None = 0.31, samples: float | None = 825.8,
         wait: float | None = 0.08, loss: float | None = 7.783, amp: str | None = "bf16") -> RankState:
    return RankState(index, 41000 + index, step, step_time, samples, wait, loss, amp, None, 256, 2 << 30)


def workload_lines(ranks: tuple[RankState, ...], rows: int | None = None) -> list[str]:
    panel = WorkloadPanel()
    panel.show(WorkloadState("steady", "running", None, ranks, "training"), rows=rows)
    return [line.plain for line in panel.lines(WIDTH)]


def test_ranks_that_read_alike_are_one_line() -> None:
    lines = workload_lines(tuple(rank(i) for i in range(8)))
    assert len(lines) == 2 and lines[1].startswith("rank 0-7 x8 step    10   310.0ms    825.8/s data   8%")


def test_a_rank_apart_keeps_its_line_between_the_folded_others() -> None:
    ranks = tuple(rank(i, step=96 if i == 5 else 97) for i in range(8))
    lines = workload_lines(ranks)
    assert [line.split(" step")[0].strip() for line in lines[1:]] == ["rank 0-4 x5", "rank 5", "rank 6-7 x2"]


def test_columns_stay_put_when_a_value_is_missing_and_there_are_no_rates_before_the_first_step() -> None:
    lines = workload_lines((rank(0), rank(1, step=0), rank(2, step_time=None, samples=None, wait=None, loss=None,
                                                         amp=None)))
    for word in (" data", " loss", " mem"):  # every column, to the last, on a rank's line
        assert len({line.index(word) for line in lines[1:]}) == 1, (word, lines)
    for line in lines[1:]:  # the rate's column ends at the same cell with or without a figure in it
        assert len(line.split(" data")[0]) == len(lines[1].split(" data")[0]), lines
    assert lines[2].split(" data")[0].split()[-2:] == ["N/A", "N/A"], lines[2]  # step 0: nothing measured yet
    assert "N/Ams" not in lines[2] and "N/A/s" not in lines[2]  # N/A takes no unit


def test_ranks_past_their_rows_are_counted() -> None:
    ranks = tuple(rank(i, step=i) for i in range(8))
    lines = workload_lines(ranks, rows=4)
    assert len(lines) == 4 and lines[-1] == "+6 more rank(s)" and lines[1].startswith("rank 0 ")


def test_a_cut_heat_strip_says_how_many_cores_are_not_shown() -> None:
    snapshot = host_snapshot(cores=128, nodes=2)
    panel = CpuPanel()
    panel.show(snapshot.cpu, snapshot.numa, (), rows=2)
    lines = [line.plain for line in panel.lines(42)]
    assert len(lines) == 2 and lines[1].startswith("n0 ")
    shown = len(lines[1]) - len("n0 ") - len(lines[1].split()[-1]) - 1
    assert lines[1].endswith(f" +{128 - shown}"), lines[1]


def test_the_ram_history_sits_under_the_ram_bar_and_goes_first() -> None:
    snapshot = host_snapshot()
    panel = MemoryPanel()
    panel.show(snapshot.memory, snapshot.numa, (10.0, 20.0, 30.0))
    lines = [line.plain for line in panel.lines(30)]
    assert [line.split()[0] for line in lines] == ["RAM", "└", "swap", "node0"]
    panel.show(snapshot.memory, snapshot.numa, (10.0, 20.0, 30.0), rows=3)
    assert [line.plain.split()[0] for line in panel.lines(30)] == ["RAM", "swap", "node0"]


def test_one_line_of_disks_sums_them_all() -> None:
    disks = tuple(DiskSnapshot(f"nvme{i}n1", "nvme", 1e6 * i, 1e3, 10.0, 1.0, float(i)) for i in range(13))
    panel = DisksPanel()
    panel.show(disks, rows=1)
    (line,) = [line.plain for line in panel.lines(60)]
    assert line.startswith("13 disks r  78.0MB/s") and "busiest nvme12n1" in line
