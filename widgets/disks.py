"""One line per block device: kind, read/write throughput, IOPS and busy %. Given fewer rows than disks, the
busiest are kept and the others folded into one `+N quieter` line; given one line, it sums them all up."""

from __future__ import annotations

from rich.cells import cell_len
from rich.text import Text

from hwtop.model.snapshot import DiskSnapshot
from hwtop.widgets import palette
from hwtop.widgets.format import human_rate, level_style, pct
from hwtop.widgets.panel import TextPanel, View, Want
from hwtop.widgets.safe_text import data

FOLDED = 3  # lines of the folded panel: the two busiest disks and `+N quieter`


def shown_disks(disks: tuple[DiskSnapshot, ...], rows: int) -> tuple[tuple[DiskSnapshot, ...], int]:
    """At most `rows` disks, the busiest by throughput, in their own order (rows do not jump about); how many left
    out. With one line to spare for saying so."""
    if len(disks) <= rows:
        return disks, 0
    keep = max(1, rows - 1)
    busiest = sorted(range(len(disks)), key=lambda i: -((disks[i].read_bytes_per_s or 0)
                                                        + (disks[i].write_bytes_per_s or 0)))[:keep]
    return tuple(disks[i] for i in sorted(busiest)), len(disks) - keep


class DisksPanel(TextPanel):
    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.disks: tuple[DiskSnapshot, ...] = ()
        self.rows: int | None = None  # disk lines the row budget allowed at the last show; None: every disk
        self.border_title = "Disks"

    def show(self, disks: tuple[DiskSnapshot, ...], rows: int | None = None) -> None:
        self.disks = disks
        self.rows = rows  # what the lines are built for, kept with the data they are compared by
        if not self.same_as_shown((disks, self.rows)):
            self.changed()

    def take(self, view: View) -> None:
        self.disks = view.frame.snapshot.disks

    def want(self, width: int) -> Want:
        count = max(1, len(self.disks))
        return Want(count, min(count, FOLDED), 1)

    def draw(self, rows: int) -> None:
        self.show(self.disks, rows)

    def lines(self, width: int) -> list[Text]:
        if not self.disks:
            return [Text("no block devices", style=palette.DIM)]
        out = []
        rows = self.rows
        if rows is not None and rows <= 1 and len(self.disks) > 1:
            return [all_disks_line(self.disks, width)]
        disks, left_out = shown_disks(self.disks, len(self.disks) if rows is None else rows)
        name_width = min(12, max(7, *(len(d.name) for d in self.disks)))  # of every disk: the busiest can change
        for disk in disks:
            line = data(f"{disk.name[:name_width]:<{name_width}} ", "bold")  # a recording's or a udev rule's name
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


def counted_once(disks: tuple[DiskSnapshot, ...]) -> tuple[list[DiskSnapshot], list[str]]:
    """The disks whose bytes a sum adds (an md/dm member's are its array's too, so only the array's count), and
    the arrays whose members were left out of it."""
    names = {d.name for d in disks}
    counted = [d for d in disks if d.held_by not in names]
    return counted, sorted({d.held_by for d in disks if d.held_by in names and d.held_by is not None})


def all_disks_line(disks: tuple[DiskSnapshot, ...], width: int) -> Text:
    """`13 disks r 156.6MB/s w 21.7kB/s · busiest md1 9% · 10 in md0,md1`: every disk on one line, an array's
    members counted once, in their array, and said so. Where it is too wide the busiest disk is said shorter
    (`· md1 9%`), then the members' note, then the busiest are left out: a word is drawn whole or not at all."""
    counted, arrays = counted_once(disks)
    read = sum(d.read_bytes_per_s or 0.0 for d in counted)
    write = sum(d.write_bytes_per_s or 0.0 for d in counted)
    line = Text(f"{len(disks)} disks ", style="bold")
    line.append(f"r {human_rate(read):>9} w {human_rate(write):>9}")
    busiest = max(disks, key=lambda d: d.busy_percent if d.busy_percent is not None else -1.0)
    if busiest.busy_percent is not None:
        busy = pct(busiest.busy_percent, 0)
        for said in (f" · busiest {busiest.name} ", f" · {busiest.name} "):
            if line.cell_len + cell_len(said) + len(busy) <= width:
                line.append_text(data(said, palette.DIM))
                line.append(busy, style=level_style(busiest.busy_percent))
                break
    if arrays:
        said = f" · {len(disks) - len(counted)} in {','.join(arrays)}"
        if line.cell_len + cell_len(said) <= width:
            line.append_text(data(said, palette.DIM))
    line.truncate(max(1, width), overflow="ellipsis")  # only where the sums alone are too wide
    return line
