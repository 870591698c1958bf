"""A Frame alone draws the sparklines: it carries the history as of its tick (model/history.py's Recent), so the
same Frame shown again, after the source's rings moved on, draws the same lines."""

from __future__ import annotations

from hwtop.model.history import History
from hwtop.model.snapshot import Snapshot
from hwtop.session.session import Session
from hwtop.tui.app import HwtopApp
from tests.factories import demo_snapshots

WIDTH = 100


class Ticking:
    """The next snapshot each tick, pushed into the ring as the sampler does."""

    def __init__(self, snapshots: list[Snapshot]) -> None:
        self.snapshots, self.index, self.history = snapshots, 0, History()

    def sample(self) -> Snapshot:
        snapshot = self.snapshots[min(self.index, len(self.snapshots) - 1)]
        self.index += 1
        self.history.push(snapshot)
        return snapshot

    def close(self) -> None:
        pass


def test_each_frame_keeps_the_history_of_its_tick() -> None:
    session = Session(Ticking(demo_snapshots("dgx-a100", count=8)))
    frames = [session.tick() for _ in range(8)]
    assert [len(f.history.series("gpu0.util")) for f in frames] == list(range(1, 9))
    assert frames[3].history.series("gpu0.util") == frames[7].history.series("gpu0.util")[:4]
    assert frames[7].history.series("nothing") == ()


async def test_a_frame_shown_again_draws_the_same_sparklines() -> None:
    app = HwtopApp(Ticking(demo_snapshots("dgx-a100", count=12)))
    async with app.run_test(size=(120, 40)) as pilot:
        await app.first_frame.wait()
        app.session.paused = True
        await pilot.pause()
        main = app.main
        panels = (main.cpu_panel, main.memory_panel, main.gpu_panel)

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
