"""The monitor's main screen: the header, the panels of tui/panels.py's list (CPU, memory, disks, the GPUs, the
network, the workload and advice panes, the processes) and the key bar. It shows one Frame at a time: each panel
takes what it shows of the frame and says what it could be drawn in at its width (its `want`), tui/layout.py
shares the rows out, and each panel draws in its share."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Protocol, TypeVar

from textual import events
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.css.scalar import Scalar
from textual.message import Message

from hwtop.model.frame import Frame
from hwtop.session.controls import ControlRefused
from hwtop.tui import layout, textual_compat
from hwtop.tui.frame_view import ScreenContext, view
from hwtop.tui.panels import SLOTS, MainPanel, Slot
from hwtop.widgets import keys
from hwtop.widgets.advice import NOT_YET, SHORT_TERMINAL, AdvicePanel
from hwtop.widgets.gpu import GpuPanel
from hwtop.widgets.header import HeaderBar
from hwtop.widgets.key_bar import KeyBar
from hwtop.widgets.panel import Want
from hwtop.widgets.processes import ProcessTable

if TYPE_CHECKING:
    from textual.widgets import Input

    from hwtop.session.session import Session

_P = TypeVar("_P", bound="MainPanel")
NARROW = 100  # columns: below this the memory panel narrows
MEMORY_WIDE, MEMORY_NARROW = 44, 34  # the memory panel's columns, border included
INSIDE = 4  # a panel's border and padding, left and right
DEMO_PIDS = "a demo machine's processes are simulated: there is nothing to signal or focus (j shows its story's job)"
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
        self.header = HeaderBar(id="header")
        # The panels made at the start; one the list makes when first needed (the workload's) joins them then.
        self.panels: dict[str, MainPanel] = {slot.name: slot.make() for slot in SLOTS if slot.needed is None}
        self.top = Horizontal(id="top")
        self.footer = KeyBar()
        self.filter_box: Input | None = None  # the process filter's line, once mounted (/, a click on a GPU)
        self._filter_mount: asyncio.Future[Input] | None = None
        self.frame: Frame | None = None  # the last shown
        self.rows = layout.Rows({})  # the row budget it was shown with
        self._resumed = False
        self.children_mounted = False  # its children are mounted: a panel made from now on is mounted, not composed

    @property
    def advice_panel(self) -> AdvicePanel:
        return self._panel("advice", AdvicePanel)

    @property
    def process_table(self) -> ProcessTable:
        return self._panel("processes", ProcessTable)

    def _panel(self, name: str, kind: type[_P]) -> _P:
        panel = self.panels[name]
        if not isinstance(panel, kind):
            raise TypeError(f"the {name} panel is a {type(panel).__name__}, not a {kind.__name__}")
        return panel

    def post_message(self, message: Message) -> bool:
        """The screen's first resume keeps the styles its widgets were given when they mounted, moments before in
        the same start: Textual's resume styles every node again (about thirty, each walking the stylesheet) before
        the first frame. A later resume (back from a full screen, the theme changed meanwhile) restyles as usual."""
        if isinstance(message, events.ScreenResume) and not self._resumed:
            self._resumed = True
            message = events.ScreenResume(refresh_styles=False)
        return super().post_message(message)

    def compose(self) -> ComposeResult:
        """The top row (its left column, and beside it), then the full-width panels, in the list's order; a panel
        made after the first frame (the workload's) is mounted in its place then."""
        panels = self.panels
        yield self.header
        with self.top:
            with Vertical(id="left"):
                yield from (panels[s.name] for s in SLOTS if s.place == "left" and s.name in panels)
            yield from (panels[s.name] for s in SLOTS if s.place == "right" and s.name in panels)
        yield from (panels[s.name] for s in SLOTS if s.place == "full" and s.name in panels)
        yield self.footer

    def on_mount(self) -> None:
        for name in self.hidden_panels:
            self.panels[name].display = False
        self.children_mounted = True
        for slot in SLOTS:  # made after compose ran
            panel = self.panels.get(slot.name)
            if panel is not None and panel.parent is None:
                self._mount_in_place(slot, panel)

    @property
    def short(self) -> bool:
        """Too short to open a finding inside the pane: findings open on a screen of their own."""
        return self.app.size.height < SHORT_TERMINAL

    def show(self, frame: Frame) -> None:
        self.frame = frame
        status = self.context.status()
        terminal = self.app.size  # the terminal's: this screen's own is unset until its first layout
        self.header.show(frame.snapshot, status.interval, status.paused, status.replay, status.recording,
                         terminal.width)
        shown = self._shown(frame)
        seen = view(self.context, frame, terminal)
        for panel in shown.values():
            panel.take(seen)
        widths = self._widths(terminal.width)
        wants: dict[str, Want] = {}
        for slot in SLOTS:
            panel = shown.get(slot.name)
            want = None if panel is None else panel.want(widths[slot.place])
            if panel is not None and panel.display != (want is not None):  # nothing to show (no port, no workload)
                panel.display = want is not None
            if want is not None:
                wants[slot.name] = want
        filtering = self.filter_box is not None and bool(self.filter_box.display)
        self.rows = layout.rows(layout.Shown(terminal.width, terminal.height, wants, filter=filtering))
        for name, panel in shown.items():
            panel.draw(self.rows[name])

    def _shown(self, frame: Frame) -> dict[str, MainPanel]:
        """The panels this frame is shown to: those not hidden, one first needed now made."""
        for slot in SLOTS:
            if slot.name not in self.panels and slot.needed is not None and slot.needed(frame):
                panel = self.panels[slot.name] = slot.make()
                if self.children_mounted:
                    self._mount_in_place(slot, panel)
        return {s.name: self.panels[s.name] for s in SLOTS if s.name in self.panels and s.name not in
                self.hidden_panels}

    def _mount_in_place(self, slot: Slot, panel: MainPanel) -> None:
        """A panel made after the screen composed, mounted where the list puts it: before the next one made."""
        later = SLOTS[SLOTS.index(slot) + 1:]
        before = next((self.panels[s.name] for s in later if s.name in self.panels and s.place == slot.place), None)
        if before is not None:
            self.mount(panel, before=before)
        else:
            self.mount(panel, before=self.footer)

    def _widths(self, width: int) -> dict[str, int]:
        """Each place's content width; the memory panel narrower on a narrow terminal (its columns set here)."""
        narrow = width < NARROW
        self.set_class(narrow, "narrow")
        memory_width = MEMORY_NARROW if narrow else MEMORY_WIDE
        memory = self.panels["memory"]
        if memory.styles.width != Scalar.parse(str(memory_width)):
            memory.styles.width = memory_width
        inner = max(1, width - INSIDE)  # a full-width panel's content
        left = max(1, width - INSIDE - (0 if "memory" in self.hidden_panels else memory_width))
        return {"left": left, "right": memory_width - INSIDE, "full": inner}

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
