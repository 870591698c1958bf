"""The topology screen (`t`): where the GPUs and NICs sit against the NUMA layout, with live link throughput."""

from __future__ import annotations

from textual.app import ComposeResult

from hwtop.model.frame import Frame
from hwtop.tui import textual_compat
from hwtop.tui.frame_view import ScreenContext, view
from hwtop.tui.scrolled import ScrolledPanel
from hwtop.widgets import keys
from hwtop.widgets.header import HeaderBar
from hwtop.widgets.key_bar import KeyBar
from hwtop.widgets.topology import TopologyPanel


class TopologyScreen(textual_compat.DirtyLinesScreen[None]):  # a tick's changed lines, not every widget's every line
    DEFAULT_CSS = "TopologyScreen ScrolledPanel { border-title-style: bold; }"
    BINDINGS = keys.bindings(keys.TOPOLOGY_SCREEN)

    def __init__(self, context: ScreenContext) -> None:
        super().__init__()
        self.context = context
        self.header = HeaderBar()
        self.panel = TopologyPanel()
        self.scroll = ScrolledPanel(self.panel)

    def compose(self) -> ComposeResult:
        yield self.header
        yield self.scroll
        yield KeyBar()

    def show(self, frame: Frame) -> None:
        status = self.context.status()
        self.header.show(frame.snapshot, status.interval, status.paused, status.replay, status.recording)
        self.panel.take(view(self.context, frame, self.app.size))
        self.panel.draw(self.app.size.height)  # every line: the screen scrolls it
        self.scroll.follow_title()
