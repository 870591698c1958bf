"""One line: host, kernel, uptime, refresh interval, snapshot time, and paused/replay state. Where the line is
wider than the terminal, the kernel goes first, then the uptime, the interval and a replay's date: the host, the
time and every state badge (REPLAY, END, REC, PAUSED, probe errors) stay whole."""

from __future__ import annotations

import time

from rich.cells import cell_len
from rich.text import Text
from textual.app import RenderResult
from textual.geometry import Region
from textual.strip import Strip
from textual.widgets import Static

from hwtop.model.snapshot import Snapshot
from hwtop.widgets import palette
from hwtop.widgets.format import duration
from hwtop.widgets.safe_text import data
from hwtop.widgets.strips import drawable, line_strip


class HeaderBar(Static):
    """One line, height 1 in every stylesheet that places it. A text that reads as the one on screen (a tick within
    the same second) repaints nothing; one that differs in a few characters only (the clock) repaints those cells;
    any other change of the same width repaints the line without a layout pass."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._shown: Text | None = None

    def show(self, snapshot: Snapshot, interval: float, paused: bool, replay: str | None = None,
             recording: str | None = None, width: int | None = None) -> None:
        """`replay`: the playback state when a recording drives the app; `recording`: the file being written;
        `width`: the terminal's columns (the line gives way to fit them)."""
        text = header_line(snapshot, interval, paused, replay, recording, width or self._width())
        shown = self._shown
        if shown is not None and shown.plain == text.plain and shown.spans == text.spans:
            return
        self._shown = text
        cells = _changed_cells(shown, text)
        if cells is None:
            self.update(text, layout=shown is None or shown.cell_len != text.cell_len)  # same width: no layout
        else:  # the same line but a few characters (the clock's seconds): only those cells are sent again
            self.refresh(Region(cells[0], 0, cells[1] - cells[0], 1))

    def _width(self) -> int:
        try:
            return self.size.width or self.app.size.width
        except Exception:  # noqa: BLE001 - no app: a test's line alone
            return 1000

    def render(self) -> RenderResult:
        return self._shown if self._shown is not None else super().render()

    def render_line(self, y: int) -> Strip:
        """The line drawn straight from its Rich Text (widgets/strips.py) each second, not through Textual's
        Content path; Textual's own when it would not fit or a selection is being made."""
        shown = self._shown
        if shown is None or y != 0 or self.text_selection is not None or not drawable(shown, self.size.width):
            return super().render_line(y)
        return line_strip(self, shown, 0)


def header_line(snapshot: Snapshot, interval: float, paused: bool, replay: str | None, recording: str | None,
                width: int) -> Text:
    """The header's parts, in order; those that do not fit `width` left out, the least needed first."""
    host = snapshot.host
    when = time.localtime(snapshot.time)
    clock = time.strftime("%H:%M:%S", when)
    # (text, style, left out at this step (0: never), text from outside)
    parts: list[tuple[str, str, int, bool]] = [(" hwtop ", "bold reverse", 0, False)]
    if host is not None:
        parts += [(f" {host.hostname} ", "bold", 0, True), (f"│ {host.kernel} ", "", 1, True),
                  (f"│ up {duration(host.uptime_s)} ", "", 2, False)]
    if replay is None:
        parts += [(f"│ every {interval:g}s ", "", 3, False), (f"│ {clock} ", "", 0, False)]
    else:  # a recording's date matters, until there is no room for it
        parts += [(f"│ {time.strftime('%Y-%m-%d', when)} {clock} ", "", 4, False), (f"│ {clock} ", "", -4, False),
                  (f" {replay} ", palette.BADGE_INFO, 0, False)]
    if snapshot.errors:
        parts.append((f"│ {len(snapshot.errors)} probe error(s) ", palette.CRIT_STRONG, 0, False))
    if recording is not None:
        parts.append((f" ● REC {recording} ", palette.BADGE_CRIT, 0, True))
    if paused:
        parts.append((" PAUSED ", palette.BADGE_WARN, 0, False))

    def kept(step: int) -> list[tuple[str, str, int, bool]]:
        """The parts at this step: those left out at it or before gone; a part -N comes in at step N."""
        return [p for p in parts if not 0 < p[2] <= step and not (p[2] < 0 and -p[2] > step)]

    step = 0
    while step < 4 and sum(cell_len(p[0]) for p in kept(step)) > width:
        step += 1
    text = Text()
    for part, style, _, untrusted in kept(step):
        text.append_text(data(part, style) if untrusted else Text(part, style=style))
    return text


def _changed_cells(old: Text | None, new: Text) -> tuple[int, int] | None:
    """The cells [start, end) where two lines of the same length and styles differ; None when they differ in
    length or styles (the whole line is drawn again)."""
    if old is None or old.spans != new.spans or len(old.plain) != len(new.plain) or old.cell_len != new.cell_len:
        return None
    a, b = old.plain, new.plain
    first = next(i for i in range(len(a)) if a[i] != b[i])
    last = next(i for i in range(len(a) - 1, -1, -1) if a[i] != b[i])
    return cell_len(a[:first]), cell_len(b[:last + 1])
