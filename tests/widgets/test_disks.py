"""A box with many disks (a DGX: ten NVMe, two md arrays, NFS) must not push the GPUs off a small terminal: the
busiest disks are shown, in their own order, and a line says how many quieter ones are left out."""

from __future__ import annotations

from hwtop.cli.main import make_sampler
from hwtop.model.snapshot import DiskSnapshot
from hwtop.tui.app import HwtopApp
from hwtop.widgets.disks import shown_disks


def disk(name: str, read: float) -> DiskSnapshot:
    return DiskSnapshot(name, "nvme", read, 0.0, None, None, None)


def test_the_busiest_are_kept_in_their_own_order():
    disks = tuple(disk(f"nvme{i}n1", read) for i, read in enumerate([5.0, 900.0, 0.0, 300.0, 700.0]))
    shown, left_out = shown_disks(disks, 3)
    assert [d.name for d in shown] == ["nvme1n1", "nvme4n1"] and left_out == 3
    assert shown_disks(disks, 5) == (disks, 0)


async def test_at_80x24_a_dgx_shows_its_gpus_and_says_how_many_disks_are_left_out():
    app = HwtopApp(make_sampler("dgx-a100", no_gpu=False), interval=0.2)
    async with app.run_test(size=(80, 24)) as pilot:
        while app.ticks < 2:
            await pilot.pause(0.05)
        lines = [line.plain for line in app.main.disks_panel.lines(60)]
        assert len(lines) == 4 and lines[-1] == "+10 quieter disk(s)"
