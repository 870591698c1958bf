"""A box with many disks (a DGX: ten NVMe, two md arrays, NFS) must not push the GPUs off a small terminal: the
busiest disks are shown, in their own order, and a line says how many quieter ones are left out."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hwtop.demo.machine import demo_sampler
from hwtop.model.snapshot import DiskSnapshot
from hwtop.tui.app import HwtopApp
from hwtop.widgets.disks import all_disks_line, shown_disks
from tests.small_screen import screen_lines
from tests.tui.screens import EPOCH, FakeClock


def disk(name: str, read: float) -> DiskSnapshot:
    return DiskSnapshot(name, "nvme", read, 0.0, None, None, None)


def test_the_busiest_are_kept_in_their_own_order():
    disks = tuple(disk(f"nvme{i}n1", read) for i, read in enumerate([5.0, 900.0, 0.0, 300.0, 700.0]))
    shown, left_out = shown_disks(disks, 3)
    assert [d.name for d in shown] == ["nvme1n1", "nvme4n1"] and left_out == 3
    assert shown_disks(disks, 5) == (disks, 0)


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_at_80x24_a_dgx_shows_its_gpus_and_says_how_many_disks_are_left_out():
    """Past its first seconds (while the ranks' memory ramps up they read apart, each on a line of its own)."""
    clock = FakeClock()
    sampler = demo_sampler("dgx-a100", seed=5, clock=clock, wall=lambda: EPOCH + clock.t)
    clock.t = 30.0
    app = HwtopApp(sampler, interval=0.2)
    async with app.run_test(size=(80, 24)) as pilot:
        while app.ticks < 2:
            await pilot.pause(0.05)
        lines = [line.plain for line in app.main.panels["disks"].lines(60)]
        room = app.main.rows["disks"]  # the row budget's: 13 disks folded to the busiest and a line for the rest
        folded = f"+{13 - (room - 1)} quieter disk(s)"
        assert 2 <= len(lines) == room < 13 and lines[-1] == folded
        screen = "\n".join(screen_lines(app))
        assert "8× A100-SXM4-80GB util" in screen and folded in screen


@given(busy=st.floats(1.0, 100.0), name=st.text(alphabet="abcdefmnpv0123456789", min_size=1, max_size=16),
       width=st.integers(34, 80))
def test_the_one_line_summary_draws_each_word_whole(busy: float, name: str, width: int) -> None:
    """Where `· busiest md1 8%` does not fit, `· md1 8%`, else nothing: never `· busies…` (issue 48)."""
    disks = (DiskSnapshot("nvme0n1", "nvme", 3.1e6, 2e3, 10.0, 1.0, 0.0), DiskSnapshot(name, "raid", 2.6e8, 3e3,
                                                                                        2000.0, 10.0, busy))
    line = all_disks_line(disks, width).plain
    assert len(line) <= width and "…" not in line, line
    assert line.endswith((f" · busiest {name} {busy:.0f}%", f" · {name} {busy:.0f}%", "kB/s")), line


def test_the_disk_summary_at_80x24_names_the_busiest_disk_whole() -> None:
    disks = tuple(DiskSnapshot(f"nvme{i}n1", "nvme", 3e7, 3e3, 274.0, 1.0, 1.0) for i in range(12)) + \
        (DiskSnapshot("md1", "raid", 2.6e8, 3.9e3, 2010.0, 1.0, 8.0),)
    assert all_disks_line(disks, 42).plain == "13 disks r 620.0MB/s w  39.9kB/s · md1 8%"


def test_the_summary_counts_an_arrays_bytes_once_and_says_where_its_members_went() -> None:
    """The DGX's layout: md1 stripes eight NVMe drives, md0 mirrors two; each member's reads are its array's too.
    Summed disk by disk, 13 disks read twice what md1 and the others read."""
    members = tuple(DiskSnapshot(f"nvme{i}n1", "nvme", 19.575e6, 1e3, 150.0, 1.0, 1.0, held_by="md1")
                    for i in range(2, 10))
    mirror = tuple(DiskSnapshot(f"nvme{i}n1", "nvme", 10e3, 200e3, 1.0, 12.0, 0.0, held_by="md0") for i in range(2))
    arrays = (DiskSnapshot("md0", "raid", 20e3, 200e3, 2.0, 12.0, 0.0),
              DiskSnapshot("md1", "raid", 156.6e6, 8e3, 1200.0, 1.0, 9.0))
    line = all_disks_line((*mirror, *members, *arrays, DiskSnapshot("nfs0", "network", 0.0, 0.0, 0.0, 0.0, None)),
                          80).plain
    assert line == "13 disks r 156.6MB/s w 208.0kB/s · busiest md1 9% · 10 in md0,md1"
    assert all_disks_line((*members, arrays[1]), 42).plain == "9 disks r 156.6MB/s w   8.0kB/s · md1 9%"
