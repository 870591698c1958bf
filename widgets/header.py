"""One line: host, kernel, uptime, refresh interval, snapshot time, and paused/replay state."""

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

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._shown: Text | None = None

    def show(self, snapshot: Snapshot, interval: float, paused: bool, replay: str | None = None,
             recording: str | None = None) -> None:
        """`replay`: the playback state when a recording drives the app; `recording`: the file being written."""
        host = snapshot.host
        text = Text()
        text.append(" hwtop ", style="bold reverse")
        if host is not None:
            text.append_text(data(f" {host.hostname} ", style="bold"))  # a recording's or a fleet host's word
            text.append_text(data(f"│ {host.kernel} │ up {duration(host.uptime_s)} "))
        if replay is None:
            text.append(f"│ every {interval:g}s ")
            text.append(f"│ {time.strftime('%H:%M:%S', time.localtime(snapshot.time))} ")
        else:
            text.append(f"│ {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(snapshot.time))} ")
            text.append(f" {replay} ", style=palette.BADGE_INFO)
        if snapshot.errors:
            text.append(f"│ {len(snapshot.errors)} probe error(s) ", style=palette.CRIT_STRONG)
        if recording is not None:
            text.append_text(data(f" ● REC {recording} ", style=palette.BADGE_CRIT))
        if paused:
            text.append(" PAUSED ", style=palette.BADGE_WARN)
        shown = self._shown
        if shown is not None and shown.plain == text.plain and shown.spans == text.spans:
            return
        self._shown = text
        cells = _changed_cells(shown, text)
        if cells is None:
            self.update(text, layout=shown is None or shown.cell_len != text.cell_len)  # same width: no layout
        else:  # the same line but a few characters (the clock's seconds): only those cells are sent again
            self.refresh(Region(cells[0], 0, cells[1] - cells[0], 1))

    def render(self) -> RenderResult:
        return self._shown if self._shown is not None else super().render()

    def render_line(self, y: int) -> Strip:
        """The line drawn straight from its Rich Text (widgets/strips.py) each second, not through Textual's
        Content path; Textual's own when it would not fit or a selection is being made."""
        shown = self._shown
        if shown is None or y != 0 or self.text_selection is not None or not drawable(shown, self.size.width):
            return super().render_line(y)
        return line_strip(self, shown, 0)


def _changed_cells(old: Text | None, new: Text) -> tuple[int, int] | None:
    """The cells [start, end) where two lines of the same length and styles differ; None when they differ in
    length or styles (the whole line is drawn again)."""
    if old is None or old.spans != new.spans or len(old.plain) != len(new.plain) or old.cell_len != new.cell_len:
        return None
    a, b = old.plain, new.plain
    first = next(i for i in range(len(a)) if a[i] != b[i])
    last = next(i for i in range(len(a) - 1, -1, -1) if a[i] != b[i])
    return cell_len(a[:first]), cell_len(b[:last + 1])
