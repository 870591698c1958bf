"""`hwtop fleet`: one row per host, worst first, read from exporters or from Prometheus; enter (or a click) opens
a host's GPUs and findings. A timer asks the source for what has arrived, four times a second; the source never
blocks, so a slow or dead endpoint is a row that says so and `q` quits at once. Everything an exporter or
Prometheus says (hostnames, GPU models, finding labels, errors) is shown as data: the tables are PlainTables,
the rest is built with `data`, and long labels are cut so the columns after them stay on screen."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import DataTable, Static

from hwtop.fleet.job import JobView
from hwtop.fleet.model import HostView, totals, worst_first
from hwtop.fleet.sources import FleetSource
from hwtop.tui.guarded_app import GuardedApp
from hwtop.widgets import keys, palette
from hwtop.widgets.format import sparkline
from hwtop.widgets.key_bar import KeyBar
from hwtop.widgets.plain_table import PlainTable
from hwtop.widgets.safe_text import data

SEVERITY_STYLE = {"critical": palette.BADGE_CRIT, "warning": palette.BADGE_WARN, "info": palette.INFO}
STATUS_WIDTH = 36  # of the status cell: the host screen shows all of it
LABEL_WIDTH = 40  # of an exporter's label in a cell: a 4 KB hostname must not push every column off the screen


def plain(value: object, style: str = "", width: int | None = None) -> Text:
    """Someone else's text, literal (safe_text.data), cut to `width` characters with an ellipsis."""
    text = "" if value is None else str(value)
    if width is not None and len(text) > width:
        text = text[: width - 1] + "…"
    return data(text, style)


def _num(value: float | None, fmt: str = "{:.0f}") -> Text:
    return Text("N/A", style=palette.DIM) if value is None else Text(fmt.format(value))


def _gib(used: float, total: float) -> Text:
    return Text(f"{used / 1024:,.0f}/{total / 1024:,.0f} GiB")


def _finding(view: HostView) -> Text:
    if not view.up:
        return Text("")
    if not view.hwtop:
        return Text("N/A (dcgm-exporter)", style=palette.DIM)
    top = view.top_finding
    if top is None:
        return Text("no problems seen", style=palette.OK)
    more = f" (+{len(view.findings) - 1})" if len(view.findings) > 1 else ""
    return plain(f"{top.severity.upper()} {top.rule}" + (f" · {top.scope}" if top.scope else "") + more,
                 SEVERITY_STYLE.get(top.severity, ""), 2 * LABEL_WIDTH)


def _status(view: HostView) -> Text:
    """Short, so the columns after it stay on screen; the host screen shows all of it."""
    if view.error:
        return plain(view.error, palette.CRIT_STRONG, STATUS_WIDTH)
    if view.notes:
        return plain("up · " + "; ".join(view.notes), palette.WARN, STATUS_WIDTH)
    return Text("up", style=palette.OK)


class HostScreen(Screen[None]):
    """One host's GPUs and findings, live while it is open."""

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
        self.table.add_columns("GPU", "MODEL", "UTIL", "TENSOR", "MEMORY", "TEMP", "POWER")
        self.ready = True
        if self.view is not None:
            self.show(self.view)

    def show(self, view: HostView) -> None:
        self.view = view
        if not self.ready:
            return  # on_mount shows it
        self.title_bar.update(Text.assemble(plain(f" {view.name} ", "bold reverse", LABEL_WIDTH),
                                            plain(f"  {view.address}", "", 2 * LABEL_WIDTH),
                                            plain(f"  {view.error}" if view.error else "", palette.CRIT_STRONG),
                                            plain("".join(f"  · {note}" for note in view.notes), palette.WARN)))
        self.table.clear()
        for row in view.gpus.values():
            total = row.memory_total_mib
            memory = Text("N/A", style=palette.DIM) if row.fb_used_mib is None or total is None else \
                Text(f"{row.fb_used_mib / 1024:.1f}/{total / 1024:.0f} GiB")
            tensor = None if row.tensor_active is None else row.tensor_active * 100
            self.table.add_row(plain(row.index, "", 8), plain(row.model, "", LABEL_WIDTH), _num(row.util, "{:.0f}%"),
                               _num(tensor, "{:.0f}%"), memory, _num(row.temperature, "{:.0f}°C"),
                               _num(row.power, "{:.0f} W"))
        for finding in view.findings:
            self.table.add_row(Text(""), plain(f"{finding.severity.upper()} {finding.rule}",
                                               SEVERITY_STYLE.get(finding.severity, ""), LABEL_WIDTH),
                               plain(finding.scope, "", 2 * LABEL_WIDTH), Text(""), Text(""), Text(""), Text(""))


def _share(value: float) -> Text:
    return Text(f"{100 * value:.0f}%")


class JobScreen(Screen[None]):
    """Every rank of the --job across hosts, worst first: the verdict (straggler or hang, its rank and host), the
    likely cause (that host's own top finding) and a row per rank; live while it is open."""

    BINDINGS = keys.bindings(keys.FLEET_JOB)

    def __init__(self) -> None:
        super().__init__()
        self.title_bar = Static(id="job-title")
        self.verdict = Static(id="job-verdict")
        self.table = PlainTable(id="job-ranks", cursor_type="row")
        self.view: JobView | None = None
        self.ready = False

    def compose(self) -> ComposeResult:
        yield self.title_bar
        yield self.verdict
        yield self.table
        yield KeyBar()

    def on_mount(self) -> None:
        self.table.add_columns("RANK", "HOST", "COLLECTIVE", "MOSTLY", "STEPS/S", "SAMPLES", "HOST'S TOP FINDING")
        self.ready = True
        if self.view is not None:
            self.show(self.view)

    def show(self, view: JobView) -> None:
        self.view = view
        if not self.ready:
            return
        self.title_bar.update(Text.assemble((" job ", "bold reverse"), plain(f" {view.job} ", "bold reverse",
                                                                              LABEL_WIDTH),
                                            f"  {len(view.ranks)} ranks on {len({r.host for r in view.ranks})} "
                                            "hosts, worst first"))
        verdict = view.verdict
        if verdict is None:
            self.verdict.update(plain(view.message or "no straggler: the ranks wait in collectives alike",
                                      palette.DIM if view.message else palette.OK, 4 * LABEL_WIDTH))
        else:
            head = "HANG" if verdict.kind == "hang" else "STRAGGLER"
            lines = [Text.assemble((f"{head} ", palette.BADGE_CRIT if verdict.kind == "hang" else palette.BADGE_WARN),
                                   plain(verdict.named, "bold", 2 * LABEL_WIDTH))]
            lines += [plain(f"  {line}", "", 4 * LABEL_WIDTH) for line in verdict.evidence]
            cause = view.cause
            lines.append(plain(f"  likely cause on its host: {cause.severity.upper()} {cause.rule}"
                               + (f" · {cause.scope}" if cause.scope else "") if cause else
                               "  its host names no cause of its own (no finding beyond the symptom)",
                               SEVERITY_STYLE.get(cause.severity, "") if cause else palette.DIM, 4 * LABEL_WIDTH))
            self.verdict.update(Text("\n").join(lines))
        named = verdict.rank if verdict is not None else None
        self.table.clear()
        for rank in view.ranks:
            phase, share = max(rank.shares, key=lambda item: item[1], default=("", 0.0))
            host = view.hosts.get(rank.host)
            top = host.top_finding if host is not None else None
            steps = view.steps_per_s.get((rank.host, rank.rank))
            mark = "▶ " if rank is named else "  "
            self.table.add_row(Text(f"{mark}{rank.rank}", style="bold" if rank is named else ""),
                               plain(rank.host, "", LABEL_WIDTH), _share(rank.collective_share),
                               plain(f"{100 * share:.0f}% {phase}" if phase else "", "", 24),
                               _num(steps, "{:.1f}"), Text(str(rank.samples)),
                               plain(f"{top.severity.upper()} {top.rule}" if top else "", SEVERITY_STYLE.get(
                                   top.severity, "") if top else "", LABEL_WIDTH))


def short_address(address: str) -> str:
    """http://node7:9400/metrics → node7:9400: the scheme and path only when they are not the usual ones."""
    if address.startswith("http://") and address.endswith("/metrics"):
        return address[len("http://"):-len("/metrics")]
    return address


def row_key(view: HostView) -> str:
    return f"{view.name}\x00{view.address}"


class FleetApp(GuardedApp[None]):
    TITLE = "hwtop fleet"
    CSS = """
    #fleet-title, #host-title, #job-title { height: 1; background: $panel; }
    #job-verdict { height: auto; max-height: 6; }
    #fleet-warnings { height: auto; max-height: 3; color: $warning; }
    DataTable { height: 1fr; }
    """
    BINDINGS = keys.bindings(keys.FLEET)

    def __init__(self, source: FleetSource, refresh_s: float = 0.25) -> None:
        super().__init__()
        self.source = source
        self.refresh_s = refresh_s
        self.views: list[HostView] = []
        self.redraws = 0
        self.title_bar = Static(id="fleet-title")
        self.warning_bar = Static(id="fleet-warnings")
        self.table = PlainTable(id="hosts", cursor_type="row")
        self._warned = 0

    def compose(self) -> ComposeResult:
        yield self.title_bar
        yield self.warning_bar
        yield self.table
        yield KeyBar()

    def on_mount(self) -> None:
        self.table.add_columns("HOST", "STATUS", "GPUS", "UTIL", "TREND", "GPU MEMORY", "CPU", "TOP FINDING",
                               "ADDRESS", "GPU MODELS")
        self.tick()
        self.set_interval(self.refresh_s, self.tick)
        if self.source.job is not None:  # --job: its ranks first; escape shows the hosts
            self.action_open_job()

    def tick(self) -> None:
        """Never waits on the network: the source only hands over what has already arrived."""
        if self.source.poll() or self.redraws == 0:
            self.show()

    def show(self) -> None:
        self.views = worst_first(self.source.hosts())
        self.redraws += 1
        fleet = totals(self.views)
        title = Text.assemble((" hwtop fleet ", "bold reverse"), "  ", plain(self.source.description),
                              f"  {fleet.answering}/{fleet.hosts} hosts answering · {fleet.gpus} GPUs")
        if fleet.total_mib:
            title.append(f" · GPU memory {fleet.used_mib / 1024:,.0f}/{fleet.total_mib / 1024:,.0f} GiB")
        if fleet.util_mean is not None:
            title.append(f" · util {fleet.util_mean:.0f}%")
        title.append(f" · every {self.source.interval:g}s")
        problem = self.source.problem()
        if problem:
            title.append_text(plain(f"  ⚠ {problem}", palette.CRIT_STRONG))
        self.title_bar.update(title)
        warnings = self.source.warnings
        for warning in warnings[self._warned:]:
            self.notify(warning, severity="warning", timeout=8)
        self._warned = len(warnings)
        self.warning_bar.update(Text("\n").join(plain(f"⚠ {w}", "", 4 * LABEL_WIDTH) for w in warnings[-3:]))
        self._fill_table()
        if isinstance(self.screen, HostScreen):
            view = self._view(self.screen.key)
            if view is not None:
                self.screen.show(view)
        job = self.source.job_view()
        if isinstance(self.screen, JobScreen) and job is not None:
            self.screen.show(job)

    def _fill_table(self) -> None:
        """Columns in order of use, so a narrow terminal keeps the finding and loses the address and the GPU
        models (`8x A100-SXM4-80GB`; enter shows each GPU's) first."""
        selected = self._selected_key()
        self.table.clear()
        for view in self.views:
            name, status = plain(view.name, "bold", LABEL_WIDTH), _status(view)
            address = plain(short_address(view.address), palette.DIM, LABEL_WIDTH)
            if not view.up:  # nothing measured now: blank, not N/A
                self.table.add_row(name, status, *(Text("") for _ in range(6)), address,
                                   plain(view.gpu_models, palette.DIM, LABEL_WIDTH), key=row_key(view))
                continue
            memory = view.memory
            self.table.add_row(
                name, status, Text(str(len(view.gpus))),
                _num(view.util_mean, "{:.0f}%"),
                sparkline(view.trend, 12) if view.trend else Text(""),
                Text("N/A", style=palette.DIM) if memory is None else _gib(*memory),
                _num(view.cpu_busy, "{:.0f}%"), _finding(view), address, plain(view.gpu_models, "", LABEL_WIDTH),
                key=row_key(view))
        keys = [row_key(v) for v in self.views]
        if selected in keys:
            self.table.move_cursor(row=keys.index(selected))

    def _selected_key(self) -> str | None:
        if not self.views or self.table.row_count == 0:
            return None
        row = min(self.table.cursor_row, len(self.views) - 1)
        return row_key(self.views[row]) if row >= 0 else None

    def _view(self, key: str) -> HostView | None:
        return next((v for v in self.views if row_key(v) == key), None)

    def action_open_host(self) -> None:
        key = self._selected_key()
        if key is None or isinstance(self.screen, HostScreen):
            return
        screen = HostScreen(key)
        self.push_screen(screen)
        view = self._view(key)
        if view is not None:
            screen.show(view)

    def action_open_job(self) -> None:
        """The ranks of --job; without one, a line says how to ask for it."""
        if isinstance(self.screen, JobScreen):
            return
        if self.source.job is None:
            self.notify("hwtop fleet --prometheus URL --job NAME shows a job's ranks across hosts", timeout=6)
            return
        screen = JobScreen()
        self.push_screen(screen)
        job = self.source.job_view()
        screen.show(job if job is not None else JobView(self.source.job, [], {}, None,
                                                         "waiting for the first answer"))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.data_table is self.table:
            self.action_open_host()

    def on_unmount(self) -> None:
        self.source.close()
