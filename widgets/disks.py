"""One line per block device: kind, read/write throughput, IOPS and busy %."""

from __future__ import annotations

from rich.text import Text

from hwtop.model.snapshot import DiskSnapshot
from hwtop.widgets import palette
from hwtop.widgets.format import human_rate, level_style, pct
from hwtop.widgets.panel import TextPanel
from hwtop.widgets.safe_text import data


class DisksPanel(TextPanel):
    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.disks: tuple[DiskSnapshot, ...] = ()
        self.border_title = "Disks"

    def show(self, disks: tuple[DiskSnapshot, ...]) -> None:
        self.disks = disks
        self.changed()

    def lines(self, width: int) -> list[Text]:
        if not self.disks:
            return [Text("no block devices", style=palette.DIM)]
        out = []
        for disk in self.disks:
            line = data(f"{disk.name:<8}", "bold")  # a recording's or a udev rule's name
            line.append_text(data(f"{disk.kind:<8}", palette.DIM))
            line.append(f"r {human_rate(disk.read_bytes_per_s):>9} w {human_rate(disk.write_bytes_per_s):>9}")
            if width >= 48:
                iops = "N/A" if disk.read_iops is None else f"{(disk.read_iops or 0) + (disk.write_iops or 0):.0f}"
                line.append(f" {iops:>5} io/s")
            if line.cell_len + 5 <= width:  # busy % only where it fits: a wrapped row would push panels down
                line.append(pct(disk.busy_percent, 5), style=level_style(disk.busy_percent))
            out.append(line)
        return out
