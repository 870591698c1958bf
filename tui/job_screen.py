"""The job's own screen (`j`, or at start with --pid/--job): the JobPanel, live; `d` reads the selected
process's Python stack through py-spy on a worker thread (never per tick); `F` asks the job's ranks for their
Flight Recorder dumps through their dump pipes (probes/flight_recorder/ask.py), only when pressed."""

from __future__ import annotations

import asyncio

from textual.app import ComposeResult

from hwtop.model.frame import Frame
from hwtop.tui import textual_compat
from hwtop.tui.frame_view import ScreenContext, view
from hwtop.tui.scrolled import ScrolledPanel
from hwtop.widgets import keys
from hwtop.widgets.header import HeaderBar
from hwtop.widgets.job import JobPanel
from hwtop.widgets.key_bar import KeyBar


class JobScreen(textual_compat.DirtyLinesScreen[None]):  # a tick's changed lines, not every widget's every line
    DEFAULT_CSS = """
    JobScreen HeaderBar { height: 1; background: $panel; }
    """
    BINDINGS = keys.bindings(keys.JOB_SCREEN)

    def __init__(self, context: ScreenContext, simulated: bool = False) -> None:
        """`simulated`: a demo machine's job, whose pids are not this machine's: `d` reads no stack, `F` writes to no
        pipe."""
        super().__init__()
        self.context = context
        self.simulated = simulated
        self.header = HeaderBar()
        self.panel = JobPanel(id="job", stacks=not simulated)
        self.scroll = ScrolledPanel(self.panel)
        self.dumping = False
        self.asking = False  # F's request on its worker thread

    def compose(self) -> ComposeResult:
        yield self.header
        yield self.scroll
        yield KeyBar()

    def on_mount(self) -> None:
        self.panel.focus()

    def show(self, frame: Frame) -> None:
        status = self.context.status()
        self.header.show(frame.snapshot, status.interval, status.paused, status.replay, status.recording)
        self.panel.take(view(self.context, frame, self.app.size))
        self.panel.draw(self.app.size.height)  # every line: the screen scrolls it
        self.scroll.follow_title()

    async def action_dump_stack(self) -> None:
        from hwtop.probes.stack import dump

        target = self.panel.selected
        if target is None or self.dumping:
            return
        if self.simulated:  # the advice says "d in the job view": on a demo it says why there is no stack to read
            self.panel.set_stack(f"Python stack of pid {target.pid} ({target.role})", None,
                                 "a demo machine's process is simulated: py-spy has no stack to read. Its story puts "
                                 "its time at BUSY AT above; on a real job, d dumps the whole stack with py-spy.")
            self.call_after_refresh(self.scroll.scroll_end, animate=False)
            return
        self.dumping = True
        self.panel.set_stack(f"Python stack of pid {target.pid} ({target.role}): reading with py-spy…", None, None)
        self.call_after_refresh(self.scroll.scroll_end, animate=False)
        try:
            result = await asyncio.to_thread(dump, target.pid)
        finally:
            self.dumping = False
        self.asking = False  # F's request on its worker thread
        self.panel.set_stack(f"Python stack of pid {target.pid} ({target.role})", result.text, result.message)
        self.call_after_refresh(self.scroll.scroll_end, animate=False)  # the stack is drawn last: bring it in view

    async def action_flight_dump(self) -> None:
        """Asks each rank of the job on this machine for its Flight Recorder dump; a line per rank says what became
        of it, where `d` shows a stack."""
        from hwtop.probes.flight_recorder.ask import ask_dumps

        job = self.panel.job
        if job is None or self.asking:
            return
        title = "Flight Recorder: each rank asked for its dump (F)"
        if self.simulated:
            self.panel.set_stack(title, None, "a demo machine's processes are simulated: they have no dump pipe, and "
                                              "nothing was written. On a real job whose ranks set "
                                              "TORCH_NCCL_DEBUG_INFO_PIPE_FILE, F asks each rank for its dump.")
        elif job.status != "running":
            self.panel.set_stack(title, None, "the job has ended: no rank is left to ask")
        else:
            self.asking = True
            self.panel.set_stack(f"{title}: asking…", None, None)
            try:
                lines = await asyncio.to_thread(ask_dumps, job.ranks)
            finally:
                self.asking = False
            self.panel.set_stack(title, "\n".join(lines), None)
        self.call_after_refresh(self.scroll.scroll_end, animate=False)  # drawn last: bring it in view
