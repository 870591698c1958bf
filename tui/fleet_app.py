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
from hwtop.fleet.jobs import JobList, JobRow
from hwtop.fleet.model import HostView, totals, worst_first
from hwtop.fleet.sources import FleetSource
from hwtop.tui.guarded_app import GuardedApp
from hwtop.widgets import keys, palette
from hwtop.widgets.format import human_rate, level_style, sparkline
from hwtop.widgets.key_bar import KeyBar
from hwtop.widgets.plain_table import PlainTable
from hwtop.widgets.safe_text import data

SEVERITY_STYLE = {"critical": palette.BADGE_CRIT, "warning": palette.BADGE_WARN, "info": palette.INFO}
SEVERITY_TEXT = {"critical": palette.CRIT_STRONG, "warning": palette.WARN, "info": palette.INFO}  # in a column
STATUS_WIDTH = 36  # of the status cell: the host screen shows all of it
LABEL_WIDTH = 40  # of an exporter's label in a cell: a 4 KB hostname must not push every column off the screen
NARROW = 120  # columns: below this the cells are cut shorter and the trend left out, so TOP FINDING is on screen
COLUMNS = ("HOST", "STATUS", "GPUS", "UTIL", "TREND", "GPU MEMORY", "CPU", "TOP FINDING", "NETWORK", "ADDRESS",
           "GPU MODELS")
NARROW_COLUMNS = ("HOST", "STATUS", "GPUS", "UTIL", "", "GPU MEM", "CPU", "TOP FINDING", "NETWORK", "ADDRESS",
                  "GPU MODELS")
NARROW_WIDTHS = {"host": 15, "status": 10, "finding": 21, "address": 21}  # characters of a cell, narrow


def plain(value: object, style: str = "", width: int | None = None) -> Text:
    """Someone else's text, literal (safe_text.data), cut to `width` characters with an ellipsis."""
    text = "" if value is None else str(value)
    if width is not None and len(text) > width:
        text = text[: width - 1] + "…"
    return data(text, style)


def _num(value: float | None, fmt: str = "{:.0f}") -> Text:
    return Text("N/A", style=palette.DIM) if value is None else Text(fmt.format(value))


def _gib(used: float, total: float, narrow: bool = False) -> Text:
    if narrow:
        return Text(f"{used / 1024:,.0f}/{total / 1024:,.0f}G")
    return Text(f"{used / 1024:,.0f}/{total / 1024:,.0f} GiB")


def _port(view: HostView) -> Text:
    """The host's busiest network port: its name, the bytes it moves (the busier direction) and its share of the
    line, coloured as the other levels are."""
    port = view.busiest_port
    if port is None:
        return Text("N/A", style=palette.DIM)
    share = None if port.line_ratio is None else 100 * port.line_ratio
    text = plain(port.label, "", 12)
    text.append(f" {human_rate(port.busiest)}")
    if share is not None:
        text.append(f" {share:.0f}%", style=level_style(share))
    return text


def _finding(view: HostView, width: int = 2 * LABEL_WIDTH) -> Text:
    if not view.up:
        return Text("")
    if not view.hwtop:
        return plain("N/A (dcgm-exporter)", palette.DIM, width)
    top = view.top_finding
    if top is None:
        return plain("no problems seen", palette.OK, width)
    more = f" (+{len(view.findings) - 1})" if len(view.findings) > 1 else ""
    return plain(f"{top.severity.upper()} {top.rule}" + (f" · {top.scope}" if top.scope else "") + more,
                 SEVERITY_STYLE.get(top.severity, ""), width)


def _status(view: HostView, width: int = STATUS_WIDTH) -> Text:
    """Short, so the columns after it stay on screen; the host screen shows all of it."""
    if view.error:
        return plain(view.error, palette.CRIT_STRONG, width)
    if view.notes:
        return plain("up · " + "; ".join(view.notes), palette.WARN, width)
    return Text("up", style=palette.OK)


def host_label(view: HostView) -> str:
    """The host's name; one that has not answered yet is named by its address, port included (two exporters on
    one box are two rows that must read apart)."""
    return view.hostname or short_address(view.address)


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
        for row in view.gpus:
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


def _ranks_on_hosts(view: JobView) -> str:
    ranks, hosts = len(view.ranks), len({r.host for r in view.ranks})
    return f"  {ranks} rank{'s' if ranks != 1 else ''} on {hosts} host{'s' if hosts != 1 else ''}, worst first"


class JobScreen(Screen[None]):
    """Every rank of one job across hosts, worst first: the verdict (straggler or hang, its rank and host), the
    likely cause (that host's own top finding) and a row per rank; live while it is open."""

    BINDINGS = keys.bindings(keys.FLEET_JOB)

    def __init__(self, job: str) -> None:
        super().__init__()
        self.job = job
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
                                            _ranks_on_hosts(view)))
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
            if cause is None:
                lines.append(Text("  its host names no cause of its own (no finding beyond the symptom)",
                                  style=palette.DIM))
            else:
                lines.append(Text.assemble("  likely cause on its host: ",
                                           plain(cause.severity.upper(), SEVERITY_STYLE.get(cause.severity, "")),
                                           plain(f" {cause.rule}" + (f" · {cause.scope}" if cause.scope else ""),
                                                 "bold", 2 * LABEL_WIDTH)))
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
                               plain(f"{top.severity.upper()} {top.rule}" if top else "", SEVERITY_TEXT.get(
                                   top.severity, "") if top else "", LABEL_WIDTH))


def _verdict_cell(row: JobRow, width: int) -> Text:
    verdict = row.view.verdict
    if verdict is None:
        return plain(row.view.message or "no straggler", palette.DIM if row.view.message else palette.OK, width)
    head = "HANG" if verdict.kind == "hang" else "STRAGGLER"
    return Text.assemble((head, SEVERITY_TEXT["critical" if verdict.kind == "hang" else "warning"]),
                         plain(f" {verdict.named}", "", width - len(head) - 1))


class JobListScreen(Screen[None]):
    """The jobs Prometheus holds (without --job): name, verdict, ranks and hosts, hangs and stragglers first;
    enter opens the job's ranks; live while it is open."""

    BINDINGS = keys.bindings(keys.FLEET_JOBS)

    def __init__(self) -> None:
        super().__init__()
        self.title_bar = Static(id="jobs-title")
        self.message = Static(id="jobs-message")
        self.table = PlainTable(id="jobs", cursor_type="row")
        self.jobs: JobList | None = None
        self.ready = False

    def compose(self) -> ComposeResult:
        yield self.title_bar
        yield self.message
        yield self.table
        yield KeyBar()

    def on_mount(self) -> None:
        self.table.add_columns("JOB", "VERDICT", "RANKS", "HOSTS")
        self.ready = True
        self.show(self.jobs or JobList(message="waiting for the first answer"))

    def show(self, jobs: JobList) -> None:
        selected = self.selected()  # kept by name: the rows move as verdicts change
        self.jobs = jobs
        if not self.ready:
            return
        count = len(jobs.jobs) + jobs.left_out
        self.title_bar.update(Text.assemble((" jobs ", "bold reverse"),
                                            f"  {count} job{'s' if count != 1 else ''} with hwtop rank series"
                                            + (f" ({jobs.left_out} not listed)" if jobs.left_out else "")
                                            + ", hangs and stragglers first"))
        self.message.update(plain(jobs.message or "", palette.DIM, 4 * LABEL_WIDTH))
        self.message.display = bool(jobs.message)
        self.table.clear()
        for row in jobs.jobs:
            hosts = f"{len(row.hosts)}: {', '.join(row.hosts)}" if row.hosts else ""
            self.table.add_row(plain(row.name, "bold", LABEL_WIDTH), _verdict_cell(row, 2 * LABEL_WIDTH),
                               Text(str(len(row.view.ranks))), plain(hosts, "", 2 * LABEL_WIDTH))
        names = [row.name for row in jobs.jobs]
        if selected in names:
            self.table.move_cursor(row=names.index(selected))

    def selected(self) -> str | None:
        rows = self.jobs.jobs if self.jobs is not None else []
        if not rows or self.table.row_count == 0:
            return None
        return rows[min(max(self.table.cursor_row, 0), len(rows) - 1)].name

    def row(self, name: str) -> JobRow | None:
        return next((r for r in self.jobs.jobs if r.name == name), None) if self.jobs is not None else None

    def action_open_selected(self) -> None:
        name = self.selected()
        if name is not None:
            row = self.row(name)
            self.app.push_screen(job_screen(name, None if row is None else row.view))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.data_table is self.table:
            self.action_open_selected()


def job_screen(name: str, view: JobView | None) -> JobScreen:
    """A job's ranks: the view at hand at once (the list's, opened from it), its own queries' from the next
    round."""
    screen = JobScreen(name)
    screen.show(view if view is not None else JobView(name, [], {}, None, "waiting for the first answer"))
    return screen


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
    #fleet-title, #host-title, #job-title, #jobs-title { height: 1; background: $panel; }
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
        self.given_job = source.job  # --job: the job the screen opens on and `j` shows
        self._warned = 0
        self._columns: tuple[str, ...] = ()

    def compose(self) -> ComposeResult:
        yield self.title_bar
        yield self.warning_bar
        yield self.table
        yield KeyBar()

    def on_mount(self) -> None:
        self.tick()
        self.set_interval(self.refresh_s, self.tick)
        if self.source.job is not None:  # --job: its ranks first; escape shows the hosts
            self.action_open_job()

    def tick(self) -> None:
        """Never waits on the network: the source only hands over what has already arrived. What it reads
        follows the screen: the ranks of the job open (else of --job), the job list while that is open."""
        screen = self.screen
        self.source.select_job(screen.job if isinstance(screen, JobScreen) else self.given_job)
        self.source.list_jobs(isinstance(screen, JobListScreen))
        if self.source.poll() or self.redraws == 0:
            self.show()

    def show(self) -> None:
        self.views = worst_first(self.source.hosts())
        self.redraws += 1
        fleet = totals(self.views)
        narrow = self.size.width < NARROW  # the same figures in fewer words, so none is cut
        title = Text.assemble((" hwtop fleet ", "bold reverse"), "  ",
                              "" if narrow else plain(self.source.description + "  "),
                              f"{fleet.answering}/{fleet.hosts} {'up' if narrow else 'hosts answering'}"
                              f" · {fleet.gpus} GPUs")
        if fleet.total_mib:
            title.append(f" · {'' if narrow else 'GPU memory '}"
                         f"{fleet.used_mib / 1024:,.0f}/{fleet.total_mib / 1024:,.0f} GiB")
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
        screen, job, jobs = self.screen, self.source.job_view(), self.source.jobs()
        if isinstance(screen, HostScreen):
            view = self._view(screen.key)
            if view is not None:
                screen.show(view)
        elif isinstance(screen, JobScreen):
            if job is not None and job.job == screen.job:
                screen.show(job)
        elif isinstance(screen, JobListScreen) and jobs is not None:
            screen.show(jobs)

    def on_resize(self) -> None:
        if self.redraws:
            self._fill_table()  # the columns for the new width

    def _fill_table(self) -> None:
        """Columns in order of use, so a narrow terminal keeps the finding and loses the address and the GPU
        models (`8x A100-SXM4-80GB`; enter shows each GPU's) first (← → scroll to them); below NARROW columns the
        cells are cut shorter and the trend left out."""
        selected = self._selected_key()
        scrolled = self.table.scroll_x  # clear() scrolls back to the first column: kept across a refresh
        narrow = self.size.width < NARROW
        columns = NARROW_COLUMNS if narrow else COLUMNS
        if columns != self._columns:
            self.table.clear(columns=True)
            self.table.add_columns(*columns)
            self._columns = columns
        self.table.clear()
        widths = NARROW_WIDTHS if narrow else {"host": LABEL_WIDTH, "status": STATUS_WIDTH,
                                               "finding": 2 * LABEL_WIDTH, "address": LABEL_WIDTH}
        for view in self.views:
            name, status = plain(host_label(view), "bold", widths["host"]), _status(view, widths["status"])
            address = plain(short_address(view.address), palette.DIM, widths["address"])
            if not view.up:  # nothing measured now: blank, not N/A
                self.table.add_row(name, status, *(Text("") for _ in range(7)), address,
                                   plain(view.gpu_models, palette.DIM, LABEL_WIDTH), key=row_key(view))
                continue
            memory = view.memory
            self.table.add_row(
                name, status, Text(str(len(view.gpus))), _num(view.util_mean, "{:.0f}%"),
                sparkline(view.trend, 12) if view.trend and not narrow else Text(""),
                Text("N/A", style=palette.DIM) if memory is None else _gib(*memory, narrow=narrow),
                _num(view.cpu_busy, "{:.0f}%"), _finding(view, widths["finding"]), _port(view), address,
                plain(view.gpu_models, "", LABEL_WIDTH), key=row_key(view))
        keys = [row_key(v) for v in self.views]
        if selected in keys:
            self.table.move_cursor(row=keys.index(selected))
        if scrolled:
            self.table.call_after_refresh(self.table.scroll_to, x=scrolled, animate=False)

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

    def action_help(self) -> None:
        from hwtop.tui.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(keys.fleet_help_lines(), "hwtop fleet keys"))

    def action_open_job(self) -> None:
        """The ranks of --job; without one, the jobs Prometheus holds; exporters read directly hold none."""
        if isinstance(self.screen, JobScreen | JobListScreen):
            return
        if self.given_job is not None:
            job = self.source.job_view()
            self.push_screen(job_screen(self.given_job, job if job is not None and job.job == self.given_job
                                        else None))
            return
        if not self.source.reads_jobs:
            self.notify("hwtop fleet --prometheus URL lists the jobs and their ranks across hosts", timeout=6)
            return
        screen = JobListScreen()
        if (jobs := self.source.jobs()) is not None:
            screen.show(jobs)
        self.push_screen(screen)
        self.source.list_jobs(True)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.data_table is self.table:
            self.action_open_host()

    def on_unmount(self) -> None:
        self.source.close()
