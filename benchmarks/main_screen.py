"""Cost of the main screen's show for one frame on a short terminal: the row budget and every panel's lines (no
terminal I/O), then the frame drawn (the App's own refresh, headless); and how often the advice pane's lines are
built and laid out per frame. The frames are the demo dgx-a100 straggler story from 40 s on (two findings: at 100x30
the budget folds the advice pane to one line, at 80x24 to its two headlines).

    python -m benchmarks.main_screen [--frames 60]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from hwtop.demo.machine import demo_sampler
from hwtop.model.frame import Frame
from hwtop.session.session import Session
from hwtop.tui.app import HwtopApp
from hwtop.widgets.advice import AdvicePanel
from tests.factories import ScriptedSource
from tests.tui.screens import EPOCH, FakeClock

SIZES = ((80, 24), (100, 30))


def story_frames(count: int, start: float = 40.0) -> list[Frame]:
    """`count` ticks of the straggler story, one a second from `start`, with their findings."""
    clock = FakeClock()
    session = Session(demo_sampler("dgx-a100:straggler", seed=7, clock=clock, wall=lambda: EPOCH + clock.t))
    frames = []
    try:
        while len(frames) < count:
            frame = session.tick()
            if clock.t >= start:
                frames.append(frame)
            clock.t += 1.0
    finally:
        session.close()
    return frames


class Counted:
    """Counts the calls of one method of a class while installed."""

    def __init__(self, owner: type, name: str) -> None:
        self.owner, self.name, self.calls = owner, name, 0
        self.original = getattr(owner, name)

        def counted(*args, **kwargs):
            self.calls += 1
            return self.original(*args, **kwargs)

        setattr(owner, name, counted)

    def remove(self) -> None:
        setattr(self.owner, self.name, self.original)


async def measure(frames: list[Frame], size: tuple[int, int]) -> dict[str, float]:
    app = HwtopApp(ScriptedSource([frames[0].snapshot]))
    async with app.run_test(size=size) as pilot:
        await app.first_frame.wait()
        await pilot.pause()
        await pilot.press("p")  # paused: the App's own ticks draw nothing in between
        for frame in frames[:5]:  # warm-up: every panel has drawn once
            app.main.show(frame)
            await pilot.pause()
        # a full build of the pane's lines: `_build` where the pane has one, else `lines` (which then built them)
        builds = Counted(AdvicePanel, "_build" if hasattr(AdvicePanel, "_build") else "lines")
        layouts = Counted(AdvicePanel, "get_content_height")
        shows, drawn = [], []
        try:
            for frame in frames[5:]:
                start = time.perf_counter()
                app.main.show(frame)
                middle = time.perf_counter()
                await pilot.pause()
                drawn.append((time.perf_counter() - start) * 1000)
                shows.append((middle - start) * 1000)
        finally:
            builds.remove()
            layouts.remove()
        count = len(frames) - 5
        return {"show": statistics.median(shows), "drawn": statistics.median(drawn), "builds": builds.calls / count,
                "layouts": layouts.calls / count, "advice rows": app.main.rows.advice}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", type=int, default=60)
    args = parser.parse_args()
    frames = story_frames(args.frames + 5)
    print(f"# python -m benchmarks.main_screen --frames {args.frames}")
    print("| size | show (ms, median) | show + draw (ms, median) | advice builds / frame | advice layouts / frame |")
    print("|---|---|---|---|---|")
    for size in SIZES:
        figures = asyncio.run(measure(frames, size))
        print(f"| {size[0]}x{size[1]} (advice rows {figures['advice rows']:.0f}) | {figures['show']:.3f} | "
              f"{figures['drawn']:.3f} | {figures['builds']:.2f} | {figures['layouts']:.2f} |")


if __name__ == "__main__":
    main()
