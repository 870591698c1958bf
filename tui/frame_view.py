"""What every screen of the monitor shares: it is shown a Frame through one `show(frame)`, and reads what the
Frame does not hold (the refresh interval, pause, the replay's clock, the file being recorded) from
its context, the app."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from textual.geometry import Size

from hwtop.advice.thresholds import Thresholds
from hwtop.model.frame import Frame
from hwtop.model.record import Record
from hwtop.widgets.panel import View


class Status(Record, frozen=True):
    """The header's words beside the snapshot."""

    interval: float
    paused: bool = False
    replay: str | None = None  # `REPLAY 1x 00:00:01/00:00:09 END` when a recording drives the app
    recording: str | None = None  # the file R is writing
    workload_stops: bool = True  # x stops the workload shown (not a recording's, not a demo story's)


class ScreenContext(Protocol):
    """What a screen reads besides the Frame (the app implements it)."""

    @property
    def watching(self) -> tuple[str, ...]: ...

    @property
    def thresholds(self) -> Thresholds:
        """The session's (a config file's): panels mark links, ports and memory by the rules' own judgement."""
        ...

    def status(self) -> Status: ...


@runtime_checkable
class FrameView(Protocol):
    """A screen that shows each tick's Frame."""

    def show(self, frame: Frame) -> None: ...


def view(context: ScreenContext, frame: Frame, terminal: Size) -> View:
    """The Frame as a screen's panels read it: with the context's thresholds and what the rules watch (asked only
    once they have run: the first frame's path imports no rule), and the terminal's size."""
    return View(frame, context.thresholds, terminal.width, terminal.height,
                context.watching if frame.advised else None, context.status().workload_stops)
