"""`hwtop fleet`: one row per host read from its exporter, refreshed every interval; enter (or a click) opens a
host's GPUs. A host that does not answer stays in the list, marked unreachable, and is retried each round.
Everything an exporter says (hostname, GPU model, finding labels, its errors) is shown as data: the tables are
PlainTables and the title bars are built with `data`."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from hwtop.fleet.scrape import HostView, fetch
from hwtop.tui.guarded_app import GuardedApp
from hwtop.widgets.plain_table import PlainTable
from hwtop.widgets.safe_text import data

SEVERITY_STYLE = {"critical": "bold white on red", "warning": "bold black on yellow", "info": "cyan"}


LABEL_CHARS = 48  # of an exporter's label in a cell: a 4 KB hostname must not push every column off the screen


def _label(text: str | None, chars: int = LABEL_CHARS) -> str:
    text = text or ""
    return text if len(text) <= chars else text[: chars - 1] + "…"


def _num(value: float | None, fmt: str = "{:.0f}") -> str:
    return "N/A" if value is None else fmt.format(value)


class HostScreen(Screen[None]):
    """One host's GPUs, live while it is open."""

    BINDINGS = [Binding("escape,q", "app.pop_screen", "Back")]

    def __init__(self, target: str) -> None:
        super().__init__()
        self.target = target
        self.title_bar = Static(id="host-title")
        self.table = PlainTable(id="host-gpus", cursor_type="row")
        self.view: HostView | None = None
        self.ready = False  # columns exist

    def compose(self) -> ComposeResult:
        yield self.title_bar
        yield self.table
        yield Footer()

    def on_mount(self) -> None:
        self.table.add_columns("GPU", "MODEL", "UTIL", "MEMORY", "TEMP", "POWER")
        self.ready = True
        if self.view is not None:
            self.show(self.view)

    def show(self, view: HostView) -> None:
        self.view = view
        if not self.ready:
            return  # on_mount shows it
        name = _label(view.hostname or view.url)
        self.title_bar.update(Text.assemble(data(f" {name} ", "bold reverse"), data(f"  {view.url}"),
                                            data(f"  {view.error}" if view.error else "", "bold red")))
        self.table.clear()
        for row in view.gpus.values():
            memory = "N/A" if row.fb_used_mib is None or row.fb_free_mib is None else \
                f"{row.fb_used_mib / 1024:.1f}/{(row.fb_used_mib + row.fb_free_mib) / 1024:.0f} GiB"
            self.table.add_row(_label(row.index), _label(row.model), _num(row.util, "{:.0f}%"), memory,
                               _num(row.temperature, "{:.0f}°C"), _num(row.power, "{:.0f} W"))
        for severity, rule, scope in view.findings:
            self.table.add_row("", data(_label(f"{severity.upper()} {rule}"), SEVERITY_STYLE.get(severity, "")),
                               _label(scope, 2 * LABEL_CHARS), "", "", "")


class FleetApp(GuardedApp[None]):
    TITLE = "hwtop fleet"
    CSS = """
    #fleet-title, #host-title { height: 1; background: $panel; }
    DataTable { height: 1fr; }
    """
    BINDINGS = [Binding("q", "quit", "Quit"), Binding("enter", "open_host", "GPUs of the host")]

    def __init__(self, targets: list[str], interval: float = 2.0, timeout: float = 2.0) -> None:
        super().__init__()
        self.targets = targets
        self.interval = interval
        self.timeout = timeout
        self.views: dict[str, HostView] = {}
        self.rounds = 0
        self.first_round = asyncio.Event()
        self.title_bar = Static(id="fleet-title")
        self.table = PlainTable(id="hosts", cursor_type="row")
        self._pool = ThreadPoolExecutor(max_workers=min(16, max(1, len(targets))), thread_name_prefix="hwtop-fleet")

    def compose(self) -> ComposeResult:
        yield self.title_bar
        yield self.table
        yield Footer()

    def on_mount(self) -> None:
        self.table.add_columns("HOST", "ADDRESS", "STATUS", "GPUS", "UTIL", "GPU MEMORY", "TOP FINDING")
        self.run_worker(self._poll(), name="fleet", exclusive=True)

    def _round(self) -> dict[str, HostView]:
        return dict(zip(self.targets, self._pool.map(lambda t: fetch(t, self.timeout), self.targets), strict=True))

    async def _poll(self) -> None:
        while True:
            self.views = await asyncio.to_thread(self._round)
            self.rounds += 1
            self.show()
            self.first_round.set()
            await asyncio.sleep(self.interval)

    def show(self) -> None:
        up = sum(1 for v in self.views.values() if v.error is None)
        gpus = sum(len(v.gpus) for v in self.views.values())
        self.title_bar.update(Text.assemble((" hwtop fleet ", "bold reverse"),
                                            f"  {up}/{len(self.targets)} hosts answering · {gpus} GPUs · "
                                            f"every {self.interval:g}s"))
        cursor = self.table.cursor_row
        self.table.clear()
        for target in self.targets:
            view = self.views.get(target)
            if view is None:
                continue
            if view.error:
                status = data(f"{_label(view.error, 2 * LABEL_CHARS)} (retrying)", "bold red")
                self.table.add_row("?", target, status, "", "", "", "", key=target)
                continue
            memory = view.memory
            top = view.top_finding
            finding = Text("N/A (dcgm-exporter)", style="dim") if not view.hwtop else \
                Text("no problems seen", style="green") if top is None else \
                data(_label(f"{top[0].upper()} {top[1]}" + (f" · {top[2]}" if top[2] else ""), 2 * LABEL_CHARS),
                     SEVERITY_STYLE.get(top[0], ""))
            self.table.add_row(_label(view.hostname) or "?", _label(target), Text("up", style="green"),
                               str(len(view.gpus)), _num(view.util_mean, "{:.0f}%"),
                               "N/A" if memory is None else f"{memory[0] / 1024:.0f}/{memory[1] / 1024:.0f} GiB",
                               finding, key=target)
        if self.targets:
            self.table.move_cursor(row=min(cursor, len(self.targets) - 1))
        if isinstance(self.screen, HostScreen) and self.screen.target in self.views:
            self.screen.show(self.views[self.screen.target])

    def action_open_host(self) -> None:
        if not self.targets or isinstance(self.screen, HostScreen):
            return
        target = self.targets[min(self.table.cursor_row, len(self.targets) - 1)]
        screen = HostScreen(target)
        self.push_screen(screen)
        if target in self.views:
            screen.show(self.views[target])

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.data_table is self.table:
            self.action_open_host()

    def on_unmount(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
