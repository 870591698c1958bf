"""One job across the fleet's hosts: the verdict (straggler or hang, its rank and host), the likely cause (that
host's own top finding) and a row per rank, worst first; live while it is open."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Static

from hwtop.fleet.frame import FleetFrame
from hwtop.fleet.job import JobView
from hwtop.tui.fleet.cells import LABEL_WIDTH, SEVERITY_STYLE, SEVERITY_TEXT, num, plain
from hwtop.widgets import keys, palette
from hwtop.widgets.key_bar import KeyBar
from hwtop.widgets.plain_table import PlainTable


def _ranks_on_hosts(view: JobView) -> str:
    ranks, hosts = len(view.ranks), len({r.host for r in view.ranks})
    return f"  {ranks} rank{'s' if ranks != 1 else ''} on {hosts} host{'s' if hosts != 1 else ''}, worst first"


class FleetJobScreen(Screen[None]):
    BINDINGS = keys.bindings(keys.FLEET_JOB)

    def __init__(self, job: str, view: JobView | None = None) -> None:
        """`view`: the one at hand (the list's, opened from it), until the job's own queries answer."""
        super().__init__()
        self.job = job
        self.title_bar = Static(id="job-title")
        self.verdict = Static(id="job-verdict")
        self.table = PlainTable(id="job-ranks", cursor_type="row")
        self.view: JobView = view or JobView(job, (), {}, None, "waiting for the first answer")
        self.ready = False

    def compose(self) -> ComposeResult:
        yield self.title_bar
        yield self.verdict
        yield self.table
        yield KeyBar()

    def on_mount(self) -> None:
        self.table.add_columns("RANK", "HOST", "COLLECTIVE", "MOSTLY", "STEPS/S", "SAMPLES", "HOST'S TOP FINDING")
        self.ready = True
        self.show_view(self.view)

    def show(self, frame: FleetFrame) -> None:
        if frame.job is not None and frame.job.job == self.job and frame.job is not self.view:
            self.show_view(frame.job)

    def show_view(self, view: JobView) -> None:
        self.view = view
        if not self.ready:
            return
        self.title_bar.update(Text.assemble((" job ", "bold reverse"),
                                            plain(f" {view.job} ", "bold reverse", LABEL_WIDTH), _ranks_on_hosts(view)),
                              layout=False)  # one line (CSS): no layout pass for a new title
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
                               plain(rank.host, "", LABEL_WIDTH), Text(f"{100 * rank.collective_share:.0f}%"),
                               plain(f"{100 * share:.0f}% {phase}" if phase else "", "", 24),
                               num(steps, "{:.1f}"), Text(str(rank.samples)),
                               plain(f"{top.severity.upper()} {top.rule}" if top else "", SEVERITY_TEXT.get(
                                   top.severity, "") if top else "", LABEL_WIDTH))
