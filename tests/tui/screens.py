"""Helpers for what a user sees of the main screen: a demo story played to a point, an app that has lived
through it, and the rows of the process table read off the screen."""

from __future__ import annotations

from functools import cache

from textual.pilot import Pilot

from hwtop.demo.machine import demo_sampler
from hwtop.model.snapshot import Snapshot
from hwtop.session.session import Session
from hwtop.tui.app import HwtopApp
from hwtop.tui.report_screen import ReportScreen
from tests.factories import ScriptedSource

EPOCH = 1_800_000_000.0
STORIES = ("starved", "nccl-hang", "oom", "amp", "thermal")


class FakeClock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def story_snapshots(spec: str, seconds: float = 40.0, step: float = 2.0) -> list[Snapshot]:
    """A demo machine (`dgx-a100`, `dgx-a100:starved`) played on a fake clock for `seconds` (once per process: the
    snapshots are frozen, the list is the caller's own)."""
    return list(_played(spec, seconds, step))


@cache
def _played(spec: str, seconds: float, step: float) -> tuple[Snapshot, ...]:
    clock = FakeClock()
    session = Session(demo_sampler(spec, seed=7, clock=clock, wall=lambda: EPOCH + clock.t))
    snapshots = []
    try:
        while clock.t <= seconds:
            snapshots.append(session.tick().snapshot)
            clock.t += step
    finally:
        session.close()
    return tuple(snapshots)


def lived_through(snapshots: list[Snapshot]) -> HwtopApp:
    """An app whose advice has seen every snapshot but the last, which its first tick shows."""
    app = HwtopApp(ScriptedSource(snapshots))
    for snapshot in snapshots[:-1]:
        app.session.advance(lambda snapshot=snapshot: snapshot)
    return app


def process_rows(lines: list[str]) -> int:
    """Processes listed on the screen: the rows under the table's column header, inside its border."""
    header = next(i for i, line in enumerate(lines) if " PID " in line and "COMMAND" in line)
    rows = 0
    for line in lines[header + 1:]:
        if line.lstrip().startswith("╰"):
            break
        if line.strip("│ ▁▂▃▄▅▆▇█▔▕▏▎▍▌▋▊▉"):
            rows += 1
    return rows


async def opened_report(app: HwtopApp, pilot: Pilot[None], polls: int = 200) -> ReportScreen:
    """`b` pressed once the first frame is drawn: the report screen, with its text once made (a worker makes it;
    `polls` pauses of 50 ms bound the wait on a loaded box, it returns as the text arrives)."""
    await app.first_frame.wait()
    await pilot.press("b")
    screen = app.screen
    assert isinstance(screen, ReportScreen)
    for _ in range(polls):
        await pilot.pause(0.05)
        if screen.text is not None:
            break
    return screen
