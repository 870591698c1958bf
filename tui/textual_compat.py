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
from textual._parser import ParseError
from textual._time import get_time
from textual._xterm_parser import XTermParser
from textual.app import App

if TYPE_CHECKING:
    from textual.filter import LineFilter
    from textual.screen import Screen
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


__all__ = ["AUTO_RESTART_FLAG", "PARSER_DEADLINE", "SUSPENDED_FLAG", "UNKNOWN", "ExceptionHookApp", "ParseError",
           "SigcontHookDriver", "XTermParser", "add_line_filter", "get_time", "line_filters", "parser_deadline",
           "screen_strips"]
