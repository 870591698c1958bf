"""The fleet's first screen: a title, a summary line (hosts up and down, GPUs, GPUs idle, findings by rule), the
warnings, and one row per host, hosts with findings first. `/` filters by host, GPU model, job or finding, `s`
sorts by the next column, enter opens a host's GPUs and findings."""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Input, Static

from hwtop.fleet.frame import FleetFrame, Summary
from hwtop.fleet.model import HostView
from hwtop.tui.fleet.cells import LABEL_WIDTH, plain
from hwtop.tui.fleet.host_screen import FleetHostScreen
from hwtop.tui.fleet.host_table import SORTS, HostTable, filter_hosts, key_of, sort_hosts
from hwtop.widgets import keys, palette
from hwtop.widgets.key_bar import KeyBar


def summary_line(summary: Summary, width: int) -> Text:
    """The figures an operator looks for first, most important first, so a narrow terminal cuts the least."""
    line = Text.assemble((f"{summary.up}/{summary.hosts} up", palette.OK if not summary.down else ""))
    if summary.down:
        line.append(" · ")
        line.append(f"{summary.down} down", style=palette.CRIT_STRONG)
    line.append(f" · {summary.gpus} GPUs · {summary.idle_gpus} idle")
    if summary.total_mib:
        line.append(f" · {summary.used_mib / 1024:,.0f}/{summary.total_mib / 1024:,.0f} GiB")
    if summary.util_mean is not None:
        line.append(f" · util {summary.util_mean:.0f}%")
    if summary.findings:
        line.append(" · ")
        line.append_text(plain(", ".join(f"{rule} {count}" for rule, count in summary.findings), palette.WARN))
    line.truncate(max(1, width - 1), overflow="ellipsis")
    return line


class FilterBox(Input):
    BINDINGS = keys.bindings(keys.FLEET_FILTER)

    def action_clear_filter(self) -> None:
        self.value = ""
        self.display = False
        self.screen.focus_next(HostTable)


class FleetHostsScreen(Screen[None]):
    BINDINGS = keys.bindings(keys.FLEET_HOSTS)

    def __init__(self, latest: Callable[[], FleetFrame]) -> None:
        """`latest`: the app's newest frame, drawn again when this screen is back on top."""
        super().__init__()
        self.latest = latest
        self.title_bar = Static(id="fleet-title")
        self.summary = Static(id="fleet-summary")
        self.warning_bar = Static(id="fleet-warnings")
        self.table = HostTable(id="hosts")
        self.filter_box = FilterBox(placeholder="filter by host, GPU model, job or finding (enter keeps it, escape "
                                                "clears)", id="fleet-filter")
        self.filter_box.display = False
        self.sort_key = "worst"
        self.filter_text = ""
        self.frame: FleetFrame | None = None
        self._shown: dict[Static, Text] = {}
        self._orders_of: FleetFrame | None = None  # the frame whose orders are kept
        self._orders: dict[tuple[str, str], list[HostView]] = {}  # (sort, filter) → rows
        self._jobs: dict[str, tuple[str, ...]] | None = None

    def compose(self) -> ComposeResult:
        yield self.title_bar
        yield self.summary
        yield self.warning_bar
        yield self.table
        yield self.filter_box
        yield KeyBar()

    def show(self, frame: FleetFrame) -> None:
        self.frame = frame
        width = self.size.width or self.app.size.width
        title = Text.assemble((" hwtop fleet ", "bold reverse"), "  ",
                              plain(frame.description, "", 2 * LABEL_WIDTH), f" · every {frame.interval:g}s")
        if frame.problem:
            title.append_text(plain(f"  ⚠ {frame.problem}", palette.CRIT_STRONG))
        self._update(self.title_bar, title, layout=False)  # one line each (CSS): a new text needs no layout pass
        self._update(self.summary, summary_line(frame.summary, width), layout=False)
        self._update(self.warning_bar, Text("\n").join(plain(f"⚠ {w}", "", 4 * LABEL_WIDTH)
                                                        for w in frame.warnings[-3:]), layout=True)
        if self.warning_bar.display != bool(frame.warnings):
            self.warning_bar.display = bool(frame.warnings)
        self.redraw()

    def _update(self, bar: Static, text: Text, layout: bool) -> None:
        """A bar's new text, only where it changed: Static.update lays the whole screen out again by default, a
        pass over every widget, on each frame, for a line whose size is fixed."""
        if self._shown.get(bar) != text:
            self._shown[bar] = text
            bar.update(text, layout=layout)

    def redraw(self) -> None:
        """The table again from the frame at hand: after a new frame, a sort, a filter or a resize. A frame's rows
        sorted and filtered are kept until the next frame, so a key that comes back to an order costs no sort."""
        frame = self.frame
        if frame is None:
            return
        if self._orders_of is not frame:
            self._orders_of, self._orders, self._jobs = frame, {}, None
        wanted = (self.sort_key, self.filter_text.strip().lower())
        hosts = self._orders.get(wanted)
        if hosts is None:
            hosts = self._orders[wanted] = sort_hosts(filter_hosts(frame.hosts, self.filter_text, self._jobs_of(frame)),
                                                      self.sort_key)
        self.table.show(hosts, self.size.width or self.app.size.width, self.sort_key, frame.hosts)

    def _jobs_of(self, frame: FleetFrame) -> dict[str, tuple[str, ...]]:
        """Each host's jobs from the frame's job list (what `/` finds a job by), made once a frame."""
        if self._jobs is None:
            jobs: dict[str, tuple[str, ...]] = {}
            for row in frame.jobs.jobs if frame.jobs is not None else ():
                for host in row.hosts:
                    jobs[host] = (*jobs.get(host, ()), row.name)
            self._jobs = jobs
        return self._jobs

    def on_screen_resume(self) -> None:
        frame = self.latest()
        if frame is not self.frame and frame.seq:
            self.show(frame)

    def on_resize(self, event: events.Resize) -> None:
        if self.frame is not None:
            self.show(self.frame)

    def action_cycle_sort(self) -> None:
        names = [key for key, _ in SORTS]
        self.sort_key = names[(names.index(self.sort_key) + 1) % len(names)]
        self.redraw()

    def action_filter(self) -> None:
        self.filter_box.display = True
        self.filter_box.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input is self.filter_box:
            self.filter_text = event.value
            self.redraw()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input is self.filter_box:
            self.filter_box.display = bool(event.value)
            self.table.focus()

    def action_open_host(self) -> None:
        view = self.table.selected()
        if view is None:
            return
        screen = FleetHostScreen(key_of(view))
        screen.show_view(view)
        self.app.push_screen(screen)

    def on_click(self, event: events.Click) -> None:
        if event.chain == 2 and isinstance(event.widget, HostTable):  # a double click opens, as enter does
            self.action_open_host()

