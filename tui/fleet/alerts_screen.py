"""The alerts Prometheus holds (`hwtop fleet --prometheus URL`, `a`): firing first, then pending, each with its
host, job, rank and GPU where its labels say them, and how long it has been active; the selected alert's summary
and the commands its annotations give below the table. `enter` opens the alert's job (its ranks across hosts) or,
without a job, its host. The fleet opens on this screen when an alert fires at start (or with --alerts). Every
label and annotation is someone else's text: cells are plain Text, cut to their column."""

from __future__ import annotations

import time

from rich.text import Text
from textual.app import App, ComposeResult
from textual.screen import Screen
from textual.widgets import DataTable, Static

from hwtop.fleet.alerts import AlertList, AlertRow
from hwtop.fleet.frame import FleetFrame
from hwtop.fleet.model import HostView
from hwtop.tui.fleet.cells import LABEL_WIDTH, SEVERITY_STYLE, plain, short_address
from hwtop.tui.fleet.host_screen import FleetHostScreen
from hwtop.tui.fleet.host_table import key_of
from hwtop.tui.fleet.job_screen import FleetJobScreen
from hwtop.widgets import keys, palette
from hwtop.widgets.key_bar import KeyBar
from hwtop.widgets.plain_table import PlainTable

BADGE = {"critical": "CRIT", "warning": "WARN", "info": "INFO"}
WAITING = AlertList(message="waiting for the first answer")
SUMMARY_WIDTH = 54  # cut in the table, so a row fits 120 columns; the lines below the table say all of it


def age(seconds: float | None) -> str:
    """45s, 12m, 3h05m, 2d04h: how long an alert has been active."""
    if seconds is None:
        return "-"
    whole = max(0, int(seconds))
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m"
    if whole < 86400:
        return f"{whole // 3600}h{whole % 3600 // 60:02d}m"
    return f"{whole // 86400}d{whole % 86400 // 3600:02d}h"


def state_cell(alert: AlertRow) -> Text:
    """A firing alert's severity as a badge; a pending one dim (it has not fired yet)."""
    if alert.state != "firing":
        return plain(alert.state or "?", palette.DIM, 8)
    return plain(BADGE.get(alert.severity, alert.severity.upper() or "FIRING"),
                 SEVERITY_STYLE.get(alert.severity, palette.BADGE_CRIT), 8)


def alert_cells(alert: AlertRow, now: float) -> tuple[Text, ...]:
    return (state_cell(alert), plain(alert.name, "bold", LABEL_WIDTH), plain(alert.host, "", LABEL_WIDTH),
            plain(alert.job, "", LABEL_WIDTH), plain(alert.rank, "", 8), plain(alert.gpu, "", 8),
            Text(age(None if alert.since is None else now - alert.since)), plain(alert.summary, "", SUMMARY_WIDTH))


def detail(alert: AlertRow | None) -> Text:
    """The selected alert in full: its summary, then where to go from here."""
    if alert is None:
        return Text("")
    lines = [plain(alert.summary or alert.name, "bold", 4 * LABEL_WIDTH)]
    if alert.fleet_command:
        lines.append(Text.assemble(("  from here: ", palette.DIM), plain(alert.fleet_command, "", 4 * LABEL_WIDTH)))
    if alert.host_command:
        lines.append(Text.assemble((f"  on {alert.host or 'its host'}: "[:LABEL_WIDTH], palette.DIM),
                                   plain(alert.host_command, "", 4 * LABEL_WIDTH)))
    target = f"job {alert.job}'s ranks" if alert.job else f"host {alert.host}" if alert.host else ""
    if target:
        lines.append(plain(f"  enter: {target}", palette.DIM, 4 * LABEL_WIDTH))
    return Text("\n").join(lines)


def host_view(frame: FleetFrame | None, alert: AlertRow) -> HostView | None:
    """The fleet's row for the alert's host: by name, else by the target address the alert came from."""
    hosts = frame.hosts if frame is not None else ()
    found = next((view for view in hosts if alert.host and view.name == alert.host), None)
    if found is None and alert.instance:
        found = next((view for view in hosts if alert.instance in
                      {short_address(a.strip()) for a in view.address.split(",")}), None)
    return found


class FleetAlertsScreen(Screen[None]):
    BINDINGS = keys.bindings(keys.FLEET_ALERTS)
    DEFAULT_CSS = """
    #alerts-title { height: 1; background: $panel; }
    #alerts-detail { height: auto; max-height: 4; }
    """

    def __init__(self, frame: FleetFrame | None = None) -> None:
        super().__init__()
        self.title_bar = Static(id="alerts-title")
        self.message = Static(id="alerts-message")
        self.table = PlainTable(id="alerts", cursor_type="row")
        self.detail = Static(id="alerts-detail")
        self.frame = frame
        self.alerts: AlertList = (frame.alerts if frame is not None else None) or WAITING
        self.ready = False

    def compose(self) -> ComposeResult:
        yield self.title_bar
        yield self.message
        yield self.table
        yield self.detail
        yield KeyBar()

    def on_mount(self) -> None:
        self.table.add_columns("", "ALERT", "HOST", "JOB", "RANK", "GPU", "FOR", "SUMMARY")
        self.ready = True
        self.show_alerts(self.alerts)

    def show(self, frame: FleetFrame) -> None:
        self.frame = frame
        if frame.alerts is not None and frame.alerts is not self.alerts:
            self.show_alerts(frame.alerts)

    def show_alerts(self, alerts: AlertList) -> None:
        selected = self.selected()  # kept by alert and host: the rows move as alerts fire and resolve
        self.alerts = alerts
        if not self.ready:
            return
        title = Text.assemble((" alerts ", "bold reverse"), f"  {alerts.firing} firing, {alerts.pending} pending"
                              + (f" ({alerts.left_out} not listed)" if alerts.left_out else "") + ", firing first")
        self.title_bar.update(title, layout=False)  # one line (CSS)
        problem = alerts.message or (None if alerts.alerts else "no alert firing or pending")
        self.message.update(plain(problem or "", palette.DIM, 4 * LABEL_WIDTH))
        self.message.display = problem is not None
        self.table.clear()
        now = time.time()
        for alert in alerts.alerts:
            self.table.add_row(*alert_cells(alert, now))
        names = [(a.name, a.host, a.job, a.rank, a.gpu) for a in alerts.alerts]
        if selected is not None and selected in names:
            self.table.move_cursor(row=names.index(selected))
        self.detail.update(detail(self.current()))

    def current(self) -> AlertRow | None:
        rows = self.alerts.alerts
        if not rows or self.table.row_count == 0:
            return None
        return rows[min(max(self.table.cursor_row, 0), len(rows) - 1)]

    def selected(self) -> tuple[str, str, str, str, str] | None:
        alert = self.current() if self.ready else None
        return None if alert is None else (alert.name, alert.host, alert.job, alert.rank, alert.gpu)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table is self.table:
            self.detail.update(detail(self.current()))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.data_table is self.table:
            self.action_open_selected()

    def action_open_selected(self) -> None:
        """The job's ranks where the alert names a job; else its host's GPUs and findings."""
        alert = self.current()
        if alert is None:
            return
        if alert.job:
            frame = self.frame
            job = frame.job if frame is not None and frame.job is not None and frame.job.job == alert.job else None
            self.app.push_screen(FleetJobScreen(alert.job, job))
            return
        view = host_view(self.frame, alert)
        if view is None:
            self.notify(f"{alert.host or alert.instance or 'this alert'}: no host of this fleet by that name",
                        timeout=6)
            return
        screen = FleetHostScreen(key_of(view))
        screen.show_view(view)
        self.app.push_screen(screen)


def open_alerts_first(app: App[None], frame: FleetFrame, asked: bool, may_open: bool) -> bool:
    """At the first frame that has the alert list, opens the alerts screen over the hosts when asked (--alerts) or
    when an alert fires, and `may_open` (the hosts on show, no --job). True once that first list has come, opened
    or not: an alert that fires later does not take the screen from under the user."""
    if frame.alerts is None:
        return False
    if may_open and (asked or frame.alerts.firing):
        app.push_screen(FleetAlertsScreen(frame))
    return True


def open_alerts(app: App[None], frame: FleetFrame, reads_alerts: bool) -> None:
    """`a`: the alerts screen, from a source that has them (Prometheus)."""
    if isinstance(app.screen, FleetAlertsScreen):
        return
    if not reads_alerts:
        app.notify("hwtop fleet --prometheus URL lists the alerts Prometheus holds", timeout=6)
        return
    app.push_screen(FleetAlertsScreen(frame))
