"""One host of the fleet: its GPUs and every finding, live while it is open (each frame's row for that host)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Static

from hwtop.fleet.frame import FleetFrame
from hwtop.fleet.model import HostView
from hwtop.tui.fleet.cells import LABEL_WIDTH, SEVERITY_STYLE, num, plain
from hwtop.tui.fleet.host_table import key_of
from hwtop.widgets import keys, palette
from hwtop.widgets.key_bar import KeyBar
from hwtop.widgets.plain_table import PlainTable


class FleetHostScreen(Screen[None]):
    BINDINGS = keys.bindings(keys.FLEET_HOST)

    def __init__(self, key: str) -> None:
        super().__init__()
        self.key = key
        self.title_bar = Static(id="host-title")
        self.table = PlainTable(id="host-gpus", cursor_type="row")
        self.view: HostView | None = None
        self.ready = False  # columns exist

    def compose(self) -> ComposeResult:
        yield self.title_bar
        yield self.table
        yield KeyBar()

    def on_mount(self) -> None:
        self.table.add_columns("GPU", "MODEL", "UTIL", "TENSOR", "MEMORY", "TEMP", "POWER", "OWNER")
        self.ready = True
        if self.view is not None:
            self.show_view(self.view)

    def show(self, frame: FleetFrame) -> None:
        view = next((v for v in frame.hosts if key_of(v) == self.key), None)
        if view is not None and view is not self.view:
            self.show_view(view)

    def show_view(self, view: HostView) -> None:
        self.view = view
        if not self.ready:
            return  # on_mount shows it
        self.title_bar.update(Text.assemble(plain(f" {view.name} ", "bold reverse", LABEL_WIDTH),
                                            plain(f"  {view.address}", "", 2 * LABEL_WIDTH),
                                            plain(f"  {view.error}" if view.error else "", palette.CRIT_STRONG),
                                            plain("".join(f"  · {note}" for note in view.notes), palette.WARN)),
                              layout=False)  # one line (CSS): no layout pass for a new title
        self.table.clear()
        for row in view.gpus:
            total = row.memory_total_mib
            memory = Text("N/A", style=palette.DIM) if row.fb_used_mib is None or total is None else \
                Text(f"{row.fb_used_mib / 1024:.1f}/{total / 1024:.0f} GiB")
            tensor = None if row.tensor_active is None else row.tensor_active * 100
            self.table.add_row(plain(row.index, "", 8), plain(row.model, "", LABEL_WIDTH), num(row.util, "{:.0f}%"),
                               num(tensor, "{:.0f}%"), memory, num(row.temperature, "{:.0f}°C"),
                               num(row.power, "{:.0f} W"), plain(row.owner, "", LABEL_WIDTH))
        for finding in view.findings:
            self.table.add_row(Text(""), plain(f"{finding.severity.upper()} {finding.rule}",
                                               SEVERITY_STYLE.get(finding.severity, ""), LABEL_WIDTH),
                               plain(finding.scope, "", 2 * LABEL_WIDTH), *(Text("") for _ in range(5)))
