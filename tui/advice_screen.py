"""Every finding with its evidence and fix, on a screen of its own: where the terminal is too short to open a
finding inside the pane (80x24), `a` or a click brings this up instead. It follows the live findings. Below them,
what changed when: each finding raised and cleared over the session (a replay's: the recording's), a line each."""

from __future__ import annotations

import textwrap

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from hwtop.advice.timeline import describe
from hwtop.model.finding import Change
from hwtop.model.frame import Frame
from hwtop.tui.dialog import Dialog
from hwtop.tui.frame_view import ScreenContext
from hwtop.widgets import keys, palette
from hwtop.widgets.advice import AdvicePanel
from hwtop.widgets.safe_text import data

SEVERITY_STYLE = {"critical": palette.CRIT_STRONG, "warning": palette.WARN_STRONG, "info": palette.INFO_STRONG}


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
        self.timeline: tuple[Change, ...] = ()

    def compose(self) -> ComposeResult:
        scroll = VerticalScroll()
        scroll.border_title = "Advice · escape closes"
        with scroll:
            yield self.body

    def show(self, frame: Frame) -> None:
        panel, findings = self.panel, frame.findings
        panel.show(findings, frame.time, self.context.watching, dict(frame.rule_errors))
        panel.expanded = {f.key for f in findings}
        self.timeline = frame.timeline
        self._draw()

    def on_resize(self) -> None:
        self._draw()  # the first show() comes before the screen has a size: it drew at 20 columns till a tick

    def _draw(self) -> None:
        width = max(20, self.size.width - 6)  # the border, the padding and the scroll bar
        lines = [*self.panel.cached_lines(width), Text(""), *timeline_lines(self.timeline, width)]
        self.body.update(Text("\n").join(lines))  # cached_lines: shown, not sent


def timeline_lines(changes: tuple[Change, ...], width: int) -> list[Text]:
    """`What changed`, oldest first, a change per line wrapped under its text: raised in its severity's colour."""
    out = [Text("What changed", style="bold")]
    if not changes:
        out.append(Text("  nothing raised or cleared yet", style=palette.DIM))
    for change in changes:
        style = palette.DIM if change.what == "cleared" else ""
        parts = textwrap.wrap(describe(change), max(20, width - 2), subsequent_indent=" " * 9) or [""]
        first = data(f"  {parts[0]}", style)
        if change.what == "raised":
            first.stylize(SEVERITY_STYLE.get(change.severity, ""), 2, 2 + 8)  # the time
        out += [first, *(data(f"  {part}", style) for part in parts[1:])]
    return out
