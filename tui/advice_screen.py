"""Every finding with its evidence and fix, on a screen of its own: where the terminal is too short to open a
finding inside the pane (80x24), `a` or a click brings this up instead. It follows the live findings."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from hwtop.model.frame import Frame
from hwtop.tui.dialog import Dialog
from hwtop.tui.frame_view import ScreenContext
from hwtop.widgets import keys
from hwtop.widgets.advice import AdvicePanel


class AdviceScreen(Dialog[None]):
    DEFAULT_CSS = """
    AdviceScreen { align: center middle; }
    AdviceScreen > VerticalScroll { width: 100%; height: 100%; border: round $accent; background: $surface;
                                    padding: 0 1; }
    """
    BINDINGS = keys.bindings(keys.ADVICE_SCREEN)

    def __init__(self, context: ScreenContext) -> None:
        super().__init__()
        self.context = context
        self.body = Static(id="advice-body")
        self.panel = AdvicePanel()  # used only to lay the findings out, never mounted

    def compose(self) -> ComposeResult:
        scroll = VerticalScroll()
        scroll.border_title = "Advice · escape closes"
        with scroll:
            yield self.body

    def show(self, frame: Frame) -> None:
        panel, findings = self.panel, frame.findings
        panel.show(findings, frame.time, self.context.watching, dict(frame.rule_errors))
        panel.expanded = {f.key for f in findings}
        self._draw()

    def on_resize(self) -> None:
        self._draw()  # the first show() comes before the screen has a size: it drew at 20 columns till a tick

    def _draw(self) -> None:
        width = max(20, self.size.width - 4)
        self.body.update(Text("\n").join(self.panel.cached_lines(width)))  # cached_lines: shown, not sent
