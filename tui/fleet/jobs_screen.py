"""The jobs a Prometheus holds (without --job): name, verdict, ranks and hosts, hangs and stragglers first; enter
opens the job's ranks; live while it is open."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import DataTable, Static

from hwtop.fleet.frame import FleetFrame
from hwtop.fleet.jobs import JobList, JobRow
from hwtop.tui.fleet.cells import LABEL_WIDTH, SEVERITY_TEXT, plain
from hwtop.tui.fleet.job_screen import FleetJobScreen
from hwtop.widgets import keys, palette
from hwtop.widgets.key_bar import KeyBar
from hwtop.widgets.plain_table import PlainTable


def _verdict_cell(row: JobRow, width: int) -> Text:
    verdict = row.view.verdict
    if verdict is None:
        return plain(row.view.message or "no straggler", palette.DIM if row.view.message else palette.OK, width)
    head = "HANG" if verdict.kind == "hang" else "STRAGGLER"
    return Text.assemble((head, SEVERITY_TEXT["critical" if verdict.kind == "hang" else "warning"]),
                         plain(f" {verdict.named}", "", width - len(head) - 1))


class FleetJobsScreen(Screen[None]):
    BINDINGS = keys.bindings(keys.FLEET_JOBS)

    def __init__(self, jobs: JobList | None = None) -> None:
        super().__init__()
        self.title_bar = Static(id="jobs-title")
        self.message = Static(id="jobs-message")
        self.table = PlainTable(id="jobs", cursor_type="row")
        self.jobs: JobList = jobs or JobList(message="waiting for the first answer")
        self.ready = False

    def compose(self) -> ComposeResult:
        yield self.title_bar
        yield self.message
        yield self.table
        yield KeyBar()

    def on_mount(self) -> None:
        self.table.add_columns("JOB", "VERDICT", "RANKS", "HOSTS")
        self.ready = True
        self.show_jobs(self.jobs)

    def show(self, frame: FleetFrame) -> None:
        if frame.jobs is not None and frame.jobs is not self.jobs:
            self.show_jobs(frame.jobs)

    def show_jobs(self, jobs: JobList) -> None:
        selected = self.selected()  # kept by name: the rows move as verdicts change
        self.jobs = jobs
        if not self.ready:
            return
        count = len(jobs.jobs) + jobs.left_out
        self.title_bar.update(Text.assemble((" jobs ", "bold reverse"),
                                            f"  {count} job{'s' if count != 1 else ''} with hwtop rank series"
                                            + (f" ({jobs.left_out} not listed)" if jobs.left_out else "")
                                            + ", hangs and stragglers first"), layout=False)  # one line (CSS)
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
        rows = self.jobs.jobs
        if not rows or self.table.row_count == 0:
            return None
        return rows[min(max(self.table.cursor_row, 0), len(rows) - 1)].name

    def action_open_selected(self) -> None:
        name = self.selected()
        if name is not None:
            row = next((r for r in self.jobs.jobs if r.name == name), None)
            self.app.push_screen(FleetJobScreen(name, None if row is None else row.view))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.data_table is self.table:
            self.action_open_selected()
