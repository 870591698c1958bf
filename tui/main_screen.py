"""The monitor's main screen: header, CPU, disks and memory, the GPUs, the network, the workload and advice panes,
the processes and the key bar. It shows one Frame at a time; how tall each panel may be comes from tui/layout.py,
from what each panel says it could be drawn in at this width (its `want`)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Protocol

from textual import events
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.css.scalar import Scalar
from textual.message import Message

from hwtop.model.frame import Frame
from hwtop.session.controls import ControlRefused
from hwtop.tui import layout, textual_compat
from hwtop.tui.frame_view import ScreenContext
from hwtop.widgets import keys
from hwtop.widgets.advice import NOT_YET, AdvicePanel
from hwtop.widgets.cpu import CpuPanel
from hwtop.widgets.disks import DisksPanel
from hwtop.widgets.gpu import GpuPanel
from hwtop.widgets.header import HeaderBar
from hwtop.widgets.key_bar import KeyBar
from hwtop.widgets.memory import MemoryPanel
from hwtop.widgets.network import NetworkPanel, candidates
from hwtop.widgets.panel import FRAME, Want
from hwtop.widgets.processes import ProcessTable

if TYPE_CHECKING:
    from textual.widgets import Input

    from hwtop.session.session import Session
    from hwtop.widgets.workload import WorkloadPanel

SHORT_TERMINAL = 32  # rows: below this an open finding gets its own screen
ROOMY = 50  # rows: from this on the advice pane also shows the latest of what changed when
TIMELINE_ROWS = 4  # its heading and three changes
NARROW = 100  # columns: below this the memory panel narrows
MEMORY_WIDE, MEMORY_NARROW = 44, 34  # the memory panel's columns, border included
INSIDE = 4  # a panel's border and padding, left and right
DEMO_PIDS = "a demo machine's processes are simulated: there is nothing to signal or focus (try a --scenario story)"
NO_FINDINGS = "no problems seen: no finding to open (the advice pane names what the rules watch)"


class MainContext(ScreenContext, Protocol):
    """What the main screen's keys reach besides the Frame (the app implements it): the session's controls
    (focus a job, the demo's refusals), the last Frame and the screens the keys open."""

    session: Session
    frame: Frame | None

    @property
    def replaying(self) -> bool: ...

    def action_job(self) -> None: ...

    def open_advice_screen(self) -> None: ...


class MainScreen(textual_compat.DirtyLinesScreen[None]):  # a tick's changed lines, not every widget's every line
    AUTO_FOCUS = "ProcessTable"  # the advice pane takes focus only when asked (a, tab, a click)
    BINDINGS = keys.main_screen_bindings()  # its own keys (the processes, the advice pane), and the app's

    def __init__(self, context: MainContext, hide: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.context = context  # the app: what the screen reads besides the Frame, and its session's controls
        self.hidden_panels = set(hide)
        self.header, self.cpu_panel = HeaderBar(id="header"), CpuPanel(id="cpu")
        self.disks_panel = DisksPanel(id="disks")
        self.memory_panel, self.gpu_panel = MemoryPanel(id="memory"), GpuPanel(id="gpu")
        self.network_panel = NetworkPanel(id="network", classes="quiet")  # as the first show finds it, mostly
        self.process_table = ProcessTable(id="processes")
        # Made when a workload first shows (the embedded job, a demo's story): a box without one never composes,
        # styles or imports it, as the filter's line (_filter_box).
        self.workload_panel: WorkloadPanel | None = None
        self.advice_panel = AdvicePanel(id="advice", classes="empty")  # as the first show finds it, mostly: no restyle
        self.top = Horizontal(id="top")
        self.footer = KeyBar()
        self.filter_box: Input | None = None  # the process filter's line, once mounted (/, a click on a GPU)
        self._filter_mount: asyncio.Future[Input] | None = None
        self.frame: Frame | None = None  # the last shown
        self.rows = layout.Rows()  # the row budget it was shown with
        self._resumed = False
        self.children_mounted = False  # its children are mounted: a panel made from now on is mounted, not composed

    def post_message(self, message: Message) -> bool:
        """The screen's first resume keeps the styles its widgets were given when they mounted, moments before in
        the same start: Textual's resume styles every node again (about thirty, each walking the stylesheet) before
        the first frame. A later resume (back from a full screen, the theme changed meanwhile) restyles as usual."""
        if isinstance(message, events.ScreenResume) and not self._resumed:
            self._resumed = True
            message = events.ScreenResume(refresh_styles=False)
        return super().post_message(message)

    def compose(self) -> ComposeResult:
        yield self.header
        with self.top:
            with Vertical(id="left"):
                yield self.cpu_panel
                yield self.disks_panel
            yield self.memory_panel
        yield self.gpu_panel
        yield self.network_panel
        if self.workload_panel is not None:  # the frame shown before the screen composed has a workload
            yield self.workload_panel
        yield self.advice_panel
        yield self.process_table
        yield self.footer

    def on_mount(self) -> None:
        panels = {"cpu": self.cpu_panel, "memory": self.memory_panel, "disks": self.disks_panel,
                  "gpu": self.gpu_panel, "network": self.network_panel, "advice": self.advice_panel,
                  "processes": self.process_table}
        for name in self.hidden_panels:
            panels[name].display = False
        self.children_mounted = True
        if self.workload_panel is not None and self.workload_panel.parent is None:  # made after compose ran
            self.mount(self.workload_panel, before=self.advice_panel)

    @property
    def short(self) -> bool:
        """Too short to open a finding inside the pane: findings open on a screen of their own."""
        return self.app.size.height < SHORT_TERMINAL

    def show(self, frame: Frame) -> None:
        self.frame = frame
        snapshot, context = frame.snapshot, self.context
        history, status = frame.history, context.status()
        width, height = self.app.size  # the terminal's: this screen's own is unset until its first layout
        gpus, hidden = snapshot.gpus, self.hidden_panels
        narrow = width < NARROW
        self.set_class(narrow, "narrow")
        memory_width = MEMORY_NARROW if narrow else MEMORY_WIDE
        if self.memory_panel.styles.width != Scalar.parse(str(memory_width)):
            self.memory_panel.styles.width = memory_width
        inner = max(1, width - INSIDE)  # a full-width panel's content
        left = max(1, width - INSIDE - (0 if "memory" in hidden else memory_width))
        self.header.show(snapshot, status.interval, status.paused, status.replay, status.recording, width)
        ports = "network" not in hidden and bool(candidates(snapshot.nics))
        if ports != self.network_panel.display:  # no port known (a recording from before the network): no row
            self.network_panel.display = ports
        findings = frame.findings
        self.advice_panel.inline = not self.short
        # What the pane would draw with all it needs (a short terminal: a headline per cause, three at most; a tall
        # one: the findings and the latest lines of what changed when), then what the row budget gives it.
        panel = self.advice_panel
        panel.asked = min(3, max(1, len(findings))) if self.short else None
        panel.timeline_rows = TIMELINE_ROWS if height >= ROOMY else 0
        rule_errors = dict(frame.rule_errors)
        watching = context.watching if frame.advised else None  # None: the rules run from the next tick
        panel.take(findings, snapshot.time, watching, rule_errors, frame.timeline)
        framed = bool(findings) and panel.inline
        natural = panel.natural(inner)  # the lines the pane would draw at this width, built once: drawn from below
        headlines = min(natural, len(findings)) if findings else 1  # one per cause: the pane folded
        workload = snapshot.workload
        gpu_memory: dict[int, int] = {}  # a pid's device memory over its GPUs, as the process table sums it
        for process in (p for g in gpus for p in g.processes if p.used_memory_bytes is not None):
            gpu_memory[process.pid] = gpu_memory.get(process.pid, 0) + (process.used_memory_bytes or 0)
        job = snapshot.job  # its ranks' waits in collectives (stack samples), shown beside the workload's telemetry
        collective = {r.pid: r.collective_share for r in job.ranks if r.pid is not None and r.shares} if job else {}
        rows = layout.rows(layout.Shown(
            width=width, height=height,
            cpu=None if "cpu" in hidden else CpuPanel.want(snapshot.cpu, snapshot.numa, left),
            disks=None if "disks" in hidden else DisksPanel.want(snapshot.disks),
            memory=None if "memory" in hidden else MemoryPanel.want(snapshot.memory, snapshot.numa,
                                                                   memory_width - INSIDE),
            gpu=None if "gpu" in hidden else GpuPanel.want(snapshot.gpu_system, gpus, inner),
            network=NetworkPanel.want(snapshot.nics, inner, context.thresholds) if ports else None,
            workload=None if workload is None else self._workload_panel().want(workload, inner, gpu_memory,
                                                                                 collective),
            advice=None if "advice" in hidden else Want(natural, headlines, 1, frame=FRAME if framed else 0),
            processes="processes" not in hidden,
            filter=self.filter_box is not None and bool(self.filter_box.display)))
        self.rows = rows
        # fewer rows than it would fill: headlines, folded from the build above
        panel.rows = rows.advice if "advice" not in hidden and rows.advice < natural else panel.asked
        panel.show(findings, snapshot.time, watching, rule_errors, frame.timeline)
        serious = [f for f in frame.serious if not f.clearing(snapshot.time)]  # a GPU that recovered is not red
        marked_gpus = {i for f in serious for i in f.gpus}
        marked_cores = {c for f in serious for c in f.cores}
        self.memory_panel.show(snapshot.memory, snapshot.numa, history.series("mem"), max_lines=rows.memory)
        self.disks_panel.show(snapshot.disks, room=rows.disks)
        self.network_panel.show(snapshot.nics, room=rows.network if rows.network > 1 else 0,  # 0: one bare line
                                thresholds=context.thresholds)
        if self.workload_panel is not None:
            self.workload_panel.show(workload, room=rows.workload, stoppable=status.workload_stops,
                                     gpu_memory=gpu_memory, collective=collective)
        self.cpu_panel.show(snapshot.cpu, snapshot.numa, history.series("cpu"), marked=marked_cores,
                            max_lines=rows.cpu)
        numa_of = snapshot.topology.gpu_numa_nodes() if snapshot.topology is not None else {}
        self.gpu_panel.show(snapshot.gpu_system, gpus, history, max_lines=rows.gpu, numa_of=numa_of,
                            marked=marked_gpus, width=inner, thresholds=context.thresholds)
        self.process_table.show(snapshot.processes, gpus,
                                marked=set(workload.pids) if workload else None)

    def _workload_panel(self) -> WorkloadPanel:
        """The workload's pane, made on its first show: composed when that show comes first (a demo's story draws
        it in the first frame), else mounted above the advice pane."""
        if self.workload_panel is None:
            from hwtop.widgets.workload import WorkloadPanel

            self.workload_panel = WorkloadPanel(id="workload")
            if self.children_mounted:
                self.mount(self.workload_panel, before=self.advice_panel)
        return self.workload_panel

    def relayout(self) -> None:
        """The last Frame again, laid out anew: the terminal was resized, the filter line shown or hidden."""
        if self.frame is not None:
            self.show(self.frame)

    def on_resize(self) -> None:
        self.relayout()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("focus_process", "signal_process") and self.context.replaying:
            return False  # a recording's processes are not this machine's
        return True

    def on_advice_panel_opened(self, message: AdvicePanel.Opened) -> None:
        """A finding opened in the pane: the rows are shared out again at once; where it still does not fit, it
        opens on the advice screen instead (the first `a` at 120x40 hid the evidence and opened nothing)."""
        message.stop()
        self.relayout()
        panel = self.advice_panel
        if panel.folded:
            panel.close(message.key)
            self.relayout()
            self.post_message(AdvicePanel.DetailsWanted())

    def on_click(self, event: events.Click) -> None:
        """A click on a finding opens or closes it (the pane's own handler): the rows are shared out again."""
        if event.widget is self.advice_panel:
            self.call_after_refresh(self.relayout)

    def action_cycle_sort(self) -> None:
        table = self.process_table
        table.cycle_sort()
        table.redraw()  # the last data, the job's marks kept

    def action_reverse_sort(self) -> None:
        table = self.process_table
        table.reverse_sort()
        table.redraw()

    def action_advice(self) -> None:
        """Focus the advice pane and open (or close) its selected finding; on a short terminal, where an open
        finding would push the panels off screen, and at a second `a`, every finding opens on a screen of its own,
        with the timeline of what was raised and cleared when."""
        panel = self.advice_panel
        if self.app.screen is not self:
            return
        frame = self.context.frame
        if frame is not None and not frame.findings and not frame.timeline:  # nothing raised or cleared: no screen
            self.notify(NO_FINDINGS if frame.advised else NOT_YET)
            return
        if self.short and frame is not None and frame.findings or panel.has_focus:
            self.context.open_advice_screen()  # a second `a`: every finding, and the timeline of what changed when
            return
        panel.focus()
        panel.action_toggle_finding()
        self.relayout()  # an open finding takes rows: the budget is made again at once, not at the next tick

    def action_focus_process(self) -> None:
        """f: the highlighted process and its descendants become the focused job."""
        table = self.process_table
        if self.context.session.simulated:
            self.notify(DEMO_PIDS, severity="warning")
            return
        focus = self.context.session.job
        if focus is None:
            self.notify("this source cannot focus a job (replay or test source)", severity="warning")
            return
        rows = table.rows_shown
        if not rows or not 0 <= table.cursor_row < len(rows):
            return
        pid = rows[table.cursor_row].pid
        try:
            focus.focus(pid)
        except ControlRefused as refused:
            self.notify(str(refused), severity="error")
            return
        self.notify(f"focused on pid {pid} and its descendants: j shows the job")
        self.context.action_job()

    def action_signal_process(self) -> None:
        """k: signal the highlighted process, after a confirmation that shows its user and command."""
        from hwtop.probes.signals import describe, may_signal, send
        from hwtop.tui.signal_dialog import SignalDialog

        if self.context.replaying:
            return
        if self.context.session.simulated:
            self.notify(DEMO_PIDS, severity="warning")
            return
        table = self.process_table
        rows = table.rows_shown
        if not rows or not 0 <= table.cursor_row < len(rows):
            return
        target = describe(rows[table.cursor_row].pid)
        if target is None:
            self.notify("that process has already exited", severity="warning")
            return
        refusal = may_signal(target)
        if refusal:
            self.notify(refusal, severity="error")
            return

        def chosen(sig: int | None) -> None:
            if sig is not None:
                self.notify(send(target, sig))

        self.app.push_screen(SignalDialog(target), chosen)

    async def _filter_box(self) -> Input:
        """The filter's input line, mounted above the footer the first time it is wanted: composed hidden, its
        stylesheet and widget would cost the first frame for a key not every session presses. A second call while
        the first still mounts waits for the same mount."""
        mounting = self._filter_mount
        if mounting is None:
            from textual.widgets import Input

            box = Input(placeholder="filter processes by name, user, owner or pid (enter keeps it, escape clears)",
                        id="filter")
            box.display = False
            self.filter_box = box

            async def mounted() -> Input:
                await self.mount(box, before=self.footer)
                return box

            mounting = self._filter_mount = asyncio.ensure_future(mounted())
        return await mounting

    async def action_filter(self) -> None:
        box = await self._filter_box()
        box.display = True
        box.focus()
        self.relayout()  # the filter's line takes a row

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input is self.filter_box:
            self.process_table.filter_text = event.value
            self.process_table.redraw()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input is self.filter_box:
            event.input.display = bool(event.value)
            self.process_table.focus()
            self.relayout()

    def on_key(self, event) -> None:  # noqa: ANN001 - textual.events.Key
        box = self.filter_box
        if event.key == "escape" and box is not None and box.has_focus:
            box.value = ""
            box.display = False
            self.process_table.focus()
            self.relayout()
            event.stop()

    async def on_gpu_panel_gpu_clicked(self, message: GpuPanel.GpuClicked) -> None:
        """A click on a GPU shows its processes; a second click on it shows everything again."""
        table = self.process_table
        wanted = f"gpu:{message.index}"
        value = "" if table.filter_text == wanted else wanted
        box = await self._filter_box()
        box.value = value  # the Input's change event applies it to the table
        box.display = bool(value)
        table.filter_text = value
        table.redraw()
        self.relayout()

    def action_tree(self) -> None:
        table = self.process_table
        table.tree_view = not table.tree_view
        table.redraw()
