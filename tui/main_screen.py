"""The monitor's main screen: header, CPU, disks and memory, the GPUs, the workload and advice panes, the
processes and the key bar. It shows one Frame at a time; how tall each panel may be comes from tui/layout.py."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import Screen

from hwtop.model.frame import Frame
from hwtop.tui import layout
from hwtop.tui.frame_view import ScreenContext
from hwtop.widgets.advice import AdvicePanel
from hwtop.widgets.cpu import CpuPanel
from hwtop.widgets.disks import DisksPanel
from hwtop.widgets.gpu import GpuPanel
from hwtop.widgets.header import HeaderBar
from hwtop.widgets.key_bar import KeyBar
from hwtop.widgets.memory import MemoryPanel
from hwtop.widgets.processes import ProcessTable
from hwtop.widgets.workload import WorkloadPanel

SHORT_TERMINAL = 32  # rows: below this an open finding gets its own screen
ROOMY = 50  # rows: from this on the advice pane also shows the latest of what changed when
TIMELINE_ROWS = 4  # its heading and three changes
NARROW = 100  # columns: below this the memory panel narrows


class MainScreen(Screen[None]):
    AUTO_FOCUS = "ProcessTable"  # the advice pane takes focus only when asked (a, tab, a click)

    def __init__(self, context: ScreenContext, hide: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.context = context
        self.hidden_panels = set(hide)
        self.header, self.cpu_panel = HeaderBar(id="header"), CpuPanel(id="cpu")
        self.disks_panel = DisksPanel(id="disks")
        self.memory_panel, self.gpu_panel = MemoryPanel(id="memory"), GpuPanel(id="gpu")
        self.process_table = ProcessTable(id="processes")
        self.workload_panel = WorkloadPanel(id="workload")
        self.workload_panel.display = False
        self.advice_panel = AdvicePanel(id="advice", classes="empty")  # as the first show finds it, mostly: no restyle
        self.top = Horizontal(id="top")
        self.footer = KeyBar()

    def compose(self) -> ComposeResult:
        yield self.header
        with self.top:
            with Vertical(id="left"):
                yield self.cpu_panel
                yield self.disks_panel
            yield self.memory_panel
        yield self.gpu_panel
        yield self.workload_panel
        yield self.advice_panel
        yield self.process_table
        yield self.footer

    def on_mount(self) -> None:
        panels = {"cpu": self.cpu_panel, "memory": self.memory_panel, "disks": self.disks_panel,
                  "gpu": self.gpu_panel, "advice": self.advice_panel, "processes": self.process_table}
        for name in self.hidden_panels:
            panels[name].display = False

    @property
    def short(self) -> bool:
        """Too short to open a finding inside the pane: findings open on a screen of their own."""
        return self.app.size.height < SHORT_TERMINAL

    def show(self, frame: Frame) -> None:
        snapshot, context = frame.snapshot, self.context
        history, status = context.history, context.status()
        width, height = self.app.size  # the terminal's: this screen's own is unset until its first layout
        gpus = snapshot.gpus
        self.set_class(width < NARROW, "narrow")
        self.header.show(snapshot, status.interval, status.paused, status.replay, status.recording)
        self.memory_panel.show(snapshot.memory, snapshot.numa, history.series("mem"))
        self.disks_panel.show(snapshot.disks)
        self.workload_panel.show(snapshot.workload)
        findings = frame.findings
        self.advice_panel.inline = not self.short
        # A short terminal: a headline per cause, three at most; a tall one: the findings and the latest lines of
        # what changed when (layout.rows then gives the pane the lines it draws).
        self.advice_panel.rows = min(3, max(1, len(findings))) if self.short else None
        self.advice_panel.timeline_rows = TIMELINE_ROWS if height >= ROOMY else 0
        self.advice_panel.show(findings, snapshot.time, context.watching, dict(frame.rule_errors), frame.timeline)
        serious = [f for f in frame.serious if not f.clearing(snapshot.time)]  # a GPU that recovered is not red
        marked_gpus = {i for f in serious for i in f.gpus}
        marked_cores = {c for f in serious for c in f.cores}
        inner = max(1, width - 4)
        # cached_lines: the same lines the panels then draw at this width, built once
        rows = layout.rows(layout.Shown(
            width=width, height=height,
            workload_lines=len(self.workload_panel.cached_lines(inner)) if snapshot.workload is not None else None,
            advice_lines=len(self.advice_panel.cached_lines(inner)),
            advice_framed=bool(findings) and self.advice_panel.inline,
            disks=len(snapshot.disks), job=snapshot.job is not None, top_rows=self.top.outer_size.height))
        self.cpu_panel.show(snapshot.cpu, snapshot.numa, history.series("cpu"), marked=marked_cores,
                            max_lines=rows.cpu_lines)
        numa_of = snapshot.topology.gpu_numa_nodes() if snapshot.topology is not None else {}
        self.gpu_panel.show(snapshot.gpu_system, gpus, history, max_lines=rows.gpu_lines, numa_of=numa_of,
                            marked=marked_gpus)
        self.process_table.show(snapshot.processes, gpus,
                                marked=set(snapshot.workload.pids) if snapshot.workload else None)
