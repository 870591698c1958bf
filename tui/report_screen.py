"""The box report on a screen (`b`): what this machine (or the demo profile) can train and what will limit it.
The facts are read once, off the event loop, when the screen opens; measurements stay on the command line.
The text is shown as it prints, line by line as data: its own `[SHORT]` and `[ok]` marks are characters, not tags.
A line too long for the screen wraps under its own text (past its indent and its mark), not at column 0."""

from __future__ import annotations

import asyncio
import re
import textwrap

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from hwtop.tui.dialog import Dialog
from hwtop.widgets import keys
from hwtop.widgets.safe_text import data


def build_report(demo: str | None) -> str:
    from hwtop.report.checks import checks, tier
    from hwtop.report.facts import gather
    from hwtop.report.render import text

    facts = gather(demo)
    return text(facts, tier(facts), checks(facts)) + \
        "\n\nMeasurements and a model's memory fit: hwtop report --storage PATH --pcie --compute --params N"


MARK = re.compile(r"\[[^\]]*\] ")  # a check's `[ok   ] `, `[SHORT] `
LEAST_WIDTH = 20


def hanging(report: str, width: int) -> Text:
    """The report wrapped to `width`, each wrapped line's continuation indented under its text: past its leading
    spaces and its mark, or two cells for a line at the margin."""
    out: list[str] = []
    for line in report.split("\n"):
        text = line.lstrip(" ")
        lead = len(line) - len(text)
        mark = MARK.match(text)
        indent = " " * ((lead + (mark.end() if mark else 0)) or 2)
        out += textwrap.wrap(line, width=max(LEAST_WIDTH, width), subsequent_indent=indent,
                             drop_whitespace=True) or [""]
    return Text("\n").join(data(piece) for piece in out)


class ReportScreen(Dialog[None]):
    DEFAULT_CSS = """
    ReportScreen { align: center middle; }
    ReportScreen > VerticalScroll { width: 100%; height: 100%; border: round $accent; background: $surface;
                                    padding: 0 1; }
    """
    BINDINGS = keys.bindings(keys.REPORT_SCREEN)

    def __init__(self, demo: str | None) -> None:
        super().__init__()
        self.demo = demo
        self.body = Static("reading this box's facts…", id="report-body")
        self.text: str | None = None

    def compose(self) -> ComposeResult:
        scroll = VerticalScroll()
        scroll.border_title = "Box report · escape closes"
        with scroll:
            yield self.body

    async def on_mount(self) -> None:
        try:
            self.text = await asyncio.to_thread(build_report, self.demo)
        except Exception as error:  # noqa: BLE001 - a failed read is a message on the screen, not a crash
            self.text = f"the report could not be made: {type(error).__name__}: {error}"
        self.draw()

    def draw(self) -> None:
        if self.text is not None:
            width = self.body.content_size.width or self.app.size.width - 4  # before its first layout: the border's
            self.body.update(hanging(self.text, width))

    def on_resize(self) -> None:
        self.call_after_refresh(self.draw)
