"""Every private name of Textual that hwtop uses, in this one module.

Textual's underscored modules and attributes can move or change in any release. hwtop depends on a tested range
of Textual (pyproject.toml; .ci/run runs the lowest and the highest), and names each private thing it needs here
and nowhere else: tests/tui/test_textual_compat.py fails when a release moves or renames one, and fails when code
outside this module uses a private Textual name. Each use says why no public API serves.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, TypeVar

# The key parser and its clock: Textual's input thread is replaced (tui/quiet_driver.py), so hwtop runs the same
# parser Textual's thread runs, and waits on the same clock it times an Escape with.
from textual._compositor import ChopsUpdate, Compositor
from textual._parser import ParseError
from textual._styles_cache import StylesCache  # benchmarks/render_frames.py counts the lines it renders
from textual._time import get_time
from textual._xterm_parser import XTermParser
from textual.app import App
from textual.geometry import Region
from textual.screen import Screen

if TYPE_CHECKING:
    from collections.abc import Iterable

    from textual.filter import LineFilter
    from textual.strip import Strip

ReturnType = TypeVar("ReturnType")

UNKNOWN = object()  # a parser that keeps its Escape deadline somewhere this module does not know
PARSER_DEADLINE = "_timeout_time"  # XTermParser: when a held Escape is given up as a lone key (None: nothing held)
SUSPENDED_FLAG = "_must_signal_resume"  # LinuxDriver: set by its SIGTSTP handler when it suspended the app
AUTO_RESTART_FLAG = "_auto_restart"  # LinuxDriver: whether SIGCONT restarts the app after a suspend


def parser_deadline(parser: object) -> float | None | object:
    """When the key parser gives up waiting for the rest of a sequence (monotonic seconds, `get_time`'s clock),
    None when it holds none, UNKNOWN when this Textual keeps it elsewhere."""
    deadline = getattr(parser, PARSER_DEADLINE, UNKNOWN)
    return deadline if deadline is None or isinstance(deadline, float) else UNKNOWN


def add_line_filter(app: App[Any], line_filter: LineFilter) -> None:
    """A filter over every line the app draws (`--theme mono`): Textual sets its own from NO_COLOR at start-up
    and has no public way to add one later."""
    app._filters.append(line_filter)


def line_filters(app: App[Any]) -> list[LineFilter]:
    return app._filters


def screen_strips(screen: Screen[Any]) -> list[Strip]:
    """The screen as Textual would send it to the terminal (tests read the drawn segments)."""
    return screen._compositor.render_strips()


class DirtyLinesCompositor(Compositor):
    """Textual's compositor, asking a widget only for the lines that hold a changed cell it draws.

    Textual's partial update asks every widget that overlaps the box around all the dirty regions for its whole
    region, then sends only the dirty cells. On the main screen the header's clock (the top line) and a process
    row (near the bottom) make that box the whole screen every second, as the clock and the panel's changing rows
    do on the job and topology screens: every widget was asked for every line it covers (from its styles cache,
    each with its colours and borders worked out again), and on each changed line every widget's line was cut at
    the others' edges. Here a widget is asked for the lines from the first to the
    last that hold a dirty cell no widget in front of it covers, and not at all where there is none. A cell sent
    is taken from the front-most widget over it, as Textual does: that widget is asked for the cell's line, and
    those behind it that are not, or are asked for other lines, fill no cell in front of it. A full update (a
    layout, a resize, a new screen) is Textual's own."""

    def __init__(self) -> None:
        super().__init__()
        self._hwtop_dirty: list[Region] | None = None  # the dirty regions of the partial update being made

    def render_partial_update(self) -> ChopsUpdate | None:
        self._hwtop_dirty = list(self._dirty_regions)
        try:
            return super().render_partial_update()
        finally:
            self._hwtop_dirty = None

    def _get_renders(self, crop: Region | None = None) -> Iterable[tuple[Region, Region, list[Strip]]]:
        dirty = self._hwtop_dirty
        if dirty is None:  # a full update, or Textual's own screen reads: everything, as Textual asks
            yield from super()._get_renders(crop)
            return
        in_front: list[Region] = []  # what the widgets already asked show (they are in front of the rest)
        for widget, (region, clip) in self.visible_widgets.items():  # front to back, as Textual's own order
            shown = region.intersection(clip)
            if not (shown.width and shown.height):
                continue
            top, bottom = shown.bottom, shown.y
            for changed in dirty:
                both = shown.intersection(changed)
                if both.width and both.height:
                    for y in both.line_range:
                        if not top <= y < bottom and not _covered(in_front, y, both.x, both.right):
                            top, bottom = min(top, y), max(bottom, y + 1)
            in_front.append(shown)
            if top < bottom:
                lines = Region(shown.x, top, shown.width, bottom - top)
                yield region, lines, widget.render_lines(lines.translate((-region.x, -region.y)))


def _covered(regions: list[Region], y: int, start: int, end: int) -> bool:
    """Whether the regions cover the cells [start, end) of line y."""
    spans = sorted((r.x, r.right) for r in regions if r.y <= y < r.bottom and r.x < end and r.right > start)
    at = start
    for left, right in spans:
        if left > at:
            return False
        at = max(at, right)
    return at >= end


def screen_redrawn(screen: Screen[Any]) -> list[Strip]:
    """The screen drawn again, each visible widget's styles cache (Textual's kept lines) emptied first: what a full
    repaint would send, to compare with what the partial updates left on a terminal (benchmarks/render_frames.py
    --check). The widgets' own caches are kept (LineTable's strips, a panel's lines, widgets/strips.py's styles):
    a stale entry in one of those is drawn both ways, and the check does not see it."""
    for widget in screen._compositor.visible_widgets:
        widget._styles_cache.clear()
    return screen_strips(screen)


class DirtyLinesScreen(Screen[ReturnType]):
    """A full screen whose compositor asks only for dirty lines: the monitor's full screens (main, job, topology)
    each have the header's clock at the top and changing rows below it. Textual has no public way to give a screen
    another compositor; a modal dialog keeps Textual's own (it draws the screen under it too)."""

    def __init__(self, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:  # noqa: A002 - Textual's own names
        super().__init__(name, id, classes)
        self._compositor = DirtyLinesCompositor()


class ExceptionHookApp(App[ReturnType]):
    """Textual's handler of an unhandled exception (a crash in a handler, a worker, a render), as a public hook:
    Textual has no public one, and its handler prints a traceback and leaves the exit status to the caller."""

    def _handle_exception(self, error: Exception) -> None:
        self.unhandled_exception(error)

    def unhandled_exception(self, error: Exception) -> None:
        """Textual's own handling: the app exits, the terminal is restored, `run_test` re-raises it."""
        super()._handle_exception(error)


if sys.platform != "win32":  # Textual's Linux driver needs termios; on Windows Textual picks its own driver
    from textual.drivers.linux_driver import LinuxDriver

    class SigcontHookDriver(LinuxDriver):
        """Textual's SIGCONT handler as a public hook, and whether a SIGTSTP of its own suspended the app."""

        def _sigcont_application(self, *args: Any) -> None:
            self.sigcont_received(*args)

        def sigcont_received(self, *args: Any) -> None:
            """Textual's own handling: resume the application mode (and start a new input thread)."""
            super()._sigcont_application(*args)

        @property
        def suspended_by_sigtstp(self) -> bool:
            return bool(getattr(self, SUSPENDED_FLAG))

        @property
        def parser_debug(self) -> bool:
            """The driver's debug flag, which Textual's own input thread hands to its key parser."""
            return bool(self._debug)


__all__ = ["AUTO_RESTART_FLAG", "PARSER_DEADLINE", "SUSPENDED_FLAG", "UNKNOWN", "Compositor", "DirtyLinesCompositor",
           "DirtyLinesScreen", "ExceptionHookApp", "ParseError", "SigcontHookDriver", "StylesCache", "XTermParser",
           "add_line_filter", "get_time", "line_filters", "parser_deadline", "screen_redrawn", "screen_strips"]
