"""One line per block device: kind, read/write throughput, IOPS and busy %."""

from __future__ import annotations

from rich.text import Text

from hwtop.model.snapshot import DiskSnapshot
from hwtop.widgets import palette
from hwtop.widgets.format import human_rate, level_style, pct
from hwtop.widgets.panel import TextPanel
from hwtop.widgets.safe_text import data

ROWS_PER_DISK_LINE = 6  # a disk line per 6 rows of terminal: 4 at 24 rows, 10 at 60; the GPUs come first


def shown_disks(disks: tuple[DiskSnapshot, ...], room: int) -> tuple[tuple[DiskSnapshot, ...], int]:
    """At most `room` disks, the busiest by throughput, in their own order (rows do not jump about); how many left
    out. With one line to spare for saying so."""
    if len(disks) <= room:
        return disks, 0
    keep = max(1, room - 1)
    busiest = sorted(range(len(disks)), key=lambda i: -((disks[i].read_bytes_per_s or 0)
                                                        + (disks[i].write_bytes_per_s or 0)))[:keep]
    return tuple(disks[i] for i in sorted(busiest)), len(disks) - keep


class DisksPanel(TextPanel):
    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.disks: tuple[DiskSnapshot, ...] = ()
        self.room: int | None = None  # disk lines the terminal's height allowed at the last show
        self.border_title = "Disks"

    def show(self, disks: tuple[DiskSnapshot, ...]) -> None:
        self.disks = disks
        self.room = self._room()  # what the lines are built for, kept with the data they are compared by
        if not self.same_as_shown((disks, self.room)):
            self.changed()

    def _room(self) -> int | None:
        """Disk lines the terminal's height allows; None outside an app (a test renders the lines alone)."""
        try:
            return max(2, self.app.size.height // ROWS_PER_DISK_LINE)
        except Exception:  # noqa: BLE001 - no app
            return None

    def lines(self, width: int) -> list[Text]:
        if not self.disks:
            return [Text("no block devices", style=palette.DIM)]
        out = []
        room = self.room
        disks, left_out = shown_disks(self.disks, len(self.disks) if room is None else room)
        for disk in disks:
            line = data(f"{disk.name:<8}", "bold")  # a recording's or a udev rule's name
            line.append_text(data(f"{disk.kind:<8}", palette.DIM))
            line.append(f"r {human_rate(disk.read_bytes_per_s):>9} w {human_rate(disk.write_bytes_per_s):>9}")
            if width >= 48:
                iops = "N/A" if disk.read_iops is None else f"{(disk.read_iops or 0) + (disk.write_iops or 0):.0f}"
                line.append(f" {iops:>5} io/s")
            if line.cell_len + 5 <= width:  # busy % only where it fits: a wrapped row would push panels down
                line.append(pct(disk.busy_percent, 5), style=level_style(disk.busy_percent))
            out.append(line)
        if left_out:
            out.append(Text(f"+{left_out} quieter disk(s)", style=palette.DIM))
        return out
