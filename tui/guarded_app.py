"""The base of hwtop's Textual apps, for four things every screen of them needs:

- a notification is plain text: its message often quotes someone else's words (an error about a process, a
  path, a command), so it is never parsed as markup and its control characters are shown;
- a crash ends the app, the terminal is restored, and `run()` raises the exception for the command line to
  report (one line, a saved traceback, exit status 1: cli.crash). Textual alone would print a long traceback
  with local variables and leave the exit status to the caller (hwtop returned 0);
- an input thread that sleeps while there is no input (tui.quiet_driver): an idle monitor must cost nothing;
- the first frame out early: the garbage collector off and a short switch interval until it is drawn (`run()`)."""

from __future__ import annotations

import gc
import os
import sys
from typing import Any

from rich.console import RenderableType
from rich.text import Text
from textual.app import ReturnType
from textual.driver import Driver
from textual.notifications import SeverityLevel
from textual.worker import WorkerFailed

from hwtop.model.safe_text import printable
from hwtop.tui.textual_compat import ExceptionHookApp


class Crashed(Exception):
    """Handed to Textual instead of the crash: it renders as nothing, so Textual prints no traceback of its own
    once the terminal is back (the command line reports the crash)."""

    def __rich__(self) -> RenderableType:
        return Text(end="")


# How long the thread that writes to the terminal may wait for the interpreter's lock while the first frame is
# out: with Python's default switch interval the first frame waited, queued, while the main thread went on with
# Textual's two start-up Resize events (a trace of the start: benchmarks/README.md).
FIRST_FRAME_SWITCH_INTERVAL_S = 0.0005
# Container allocations (net) between the collector's young passes once the monitor runs, instead of Python's 700:
# each tick's rows, strips and segments are freed by their reference counts, so Python's default walked the young
# objects several times a second and found next to nothing (the collector's share of an idle monitor's CPU:
# benchmarks/README.md). Cyclic garbage still goes, less often.
YOUNG_COLLECTION_THRESHOLD = 20_000


class GuardedApp(ExceptionHookApp[ReturnType]):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.crash: BaseException | None = None  # the first unhandled exception; run() raises it
        self._switch_interval: float | None = None  # Python's, while run() shortens it for the first frame
        # run() holds the collector off until the first frame (a test's run_test does not): a flag, since the
        # collector's state alone cannot tell (Textual pauses it during a smooth scroll, and an app that ends
        # mid-scroll leaves it off for the next)
        self._collector_held = False

    def get_driver_class(self) -> type[Driver]:
        """On Linux and macOS, Textual's driver with a quiet input thread; a driver named in TEXTUAL_DRIVER, and
        Windows, as Textual chooses."""
        if sys.platform == "win32" or os.environ.get("TEXTUAL_DRIVER"):
            return super().get_driver_class()
        from hwtop.tui.quiet_driver import QuietLinuxDriver

        return QuietLinuxDriver

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = False) -> None:
        """Always plain text (`markup` is accepted for Textual's callers and ignored)."""
        super().notify(printable(message), title=printable(title), severity=severity, timeout=timeout,
                       markup=False)

    def unhandled_exception(self, error: Exception) -> None:
        if self.crash is None:
            self.crash = error.error if isinstance(error, WorkerFailed) else error  # the sampler's own error
            ended = Crashed(f"the app crashed: {self.crash!r}")
            ended.__cause__ = self.crash  # a Pilot test (run_test re-raises what Textual was given) shows both
            super().unhandled_exception(ended)  # exits and restores the terminal, quietly
        # a later error (while the crashed app shuts down) adds nothing: the first one is the cause

    def run(self, *args: Any, **kwargs: Any) -> ReturnType | None:
        """Textual's run; after a crash, the crash itself, raised once the terminal is restored.

        The garbage collector is off until the first frame is drawn (the monitor's command line turns it off
        earlier, before its imports): start-up makes tens of thousands of objects, and the collector's passes over
        them are time the first frame waits for (benchmarks/README.md). Once the frame is out, one collection, then
        what is alive (modules, classes, widgets) is frozen out of later walks: it lives as long as the app; and
        the young passes come every YOUNG_COLLECTION_THRESHOLD allocations (put back when run() returns).

        Until then too, a thread waiting for the interpreter's lock gets it within FIRST_FRAME_SWITCH_INTERVAL_S:
        the output thread, holding the first frame."""
        gc.disable()
        self._collector_held = True
        thresholds = gc.get_threshold()
        self._switch_interval = sys.getswitchinterval()
        sys.setswitchinterval(FIRST_FRAME_SWITCH_INTERVAL_S)
        try:
            result = super().run(*args, **kwargs)
        finally:
            self._collector_held = False
            gc.set_threshold(*thresholds)
            gc.enable()
            self._restore_switch_interval()
        if self.crash is not None:
            raise self.crash
        return result

    def on_mount(self) -> None:
        self.call_after_refresh(self._after_first_frame)

    def _restore_switch_interval(self) -> None:
        if self._switch_interval is not None:
            sys.setswitchinterval(self._switch_interval)
            self._switch_interval = None

    def _after_first_frame(self) -> None:
        self._restore_switch_interval()
        if self._collector_held:  # run(), not a test's run_test: the collector was kept off for the first frame
            self._collector_held = False
            gc.collect()
            gc.freeze()
            _, older, oldest = gc.get_threshold()
            gc.set_threshold(YOUNG_COLLECTION_THRESHOLD, older, oldest)
            gc.enable()
