"""A Frame alone draws the sparklines: it carries the history as of its tick (model/history.py's Recent), so the
same Frame shown again, after the source's rings moved on, draws the same lines."""

from __future__ import annotations

from hwtop.session.session import Session
from hwtop.tui.app import HwtopApp
from tests.factories import SequenceSource, demo_snapshots

WIDTH = 100


def test_each_frame_keeps_the_history_of_its_tick() -> None:
    session = Session(SequenceSource(demo_snapshots("dgx-a100", count=8)))
    frames = [session.tick() for _ in range(8)]
    assert [len(f.history.series("gpu0.util")) for f in frames] == list(range(1, 9))
    assert frames[3].history.series("gpu0.util") == frames[7].history.series("gpu0.util")[:4]
    assert frames[7].history.series("nothing") == ()


async def test_a_frame_shown_again_draws_the_same_sparklines() -> None:
    app = HwtopApp(SequenceSource(demo_snapshots("dgx-a100", count=12)))
    async with app.run_test(size=(120, 40)) as pilot:
        await app.first_frame.wait()
        app.session.paused = True
        await pilot.pause()
        main = app.main
        panels = (main.panels["cpu"], main.panels["memory"], main.panels["gpu"])

        def drawn() -> list[list[str]]:
            return [[line.plain for line in panel.lines(WIDTH)] for panel in panels]

        frame = app.session.tick()
        app.show(frame)
        before = drawn()
        later = [app.session.tick() for _ in range(4)][-1]
        assert later.history.series("gpu0.util") != frame.history.series("gpu0.util")  # the rings moved on
        app.show(later)
        assert drawn() != before
        app.show(frame)
        assert drawn() == before
