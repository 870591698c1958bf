"""The job's own screen (`j`, or at start with --pid/--job): the JobPanel, live; `d` reads the selected
process's Python stack through py-spy on a worker thread (never per tick)."""

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
        """`simulated`: a demo machine's job, whose pids are not this machine's: `d` reads no stack."""
        super().__init__()
        self.context = context
        self.simulated = simulated
        self.header = HeaderBar()
        self.panel = JobPanel(id="job", stacks=not simulated)
        self.scroll = ScrolledPanel(self.panel)
        self.dumping = False

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
        self.panel.set_stack(f"Python stack of pid {target.pid} ({target.role})", result.text, result.message)
        self.call_after_refresh(self.scroll.scroll_end, animate=False)  # the stack is drawn last: bring it in view
