"""The fleet's UI never waits on a round: with the round's parse stuck (a monkeypatched `assemble` that blocks on
an Event), a keypress still redraws the screen. Before the session moved rounds to a worker, the UI's timer
parsed and assembled the answers itself, so a slow parse froze every key for as long as it took."""

from __future__ import annotations

import threading

import pytest

from hwtop.fleet import sources
from hwtop.fleet.sources import PrometheusSource
from hwtop.tui.fleet.app import FleetApp
from tests.fleet.test_prometheus import Replay, _replay_any
from tests.small_screen import screen_lines


async def test_a_keypress_redraws_while_the_rounds_parse_is_blocked(monkeypatch: pytest.MonkeyPatch) -> None:
    replay = Replay("hwtop-two-hosts")
    real_assemble = sources.assemble
    entered, stuck, release = threading.Event(), threading.Event(), threading.Event()
    rounds = []

    def slow_assemble(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202 - assemble's own arguments
        rounds.append(1)
        if len(rounds) > 1 and not release.is_set():  # the first round draws the table; the second is stuck
            entered.set()
            stuck.set()  # cleared when the parse goes on: a key answered after that was held by it
            release.wait(10)
            stuck.clear()
        return real_assemble(*args, **kwargs)

    monkeypatch.setattr(sources, "assemble", slow_assemble)
    source = PrometheusSource("http://p:9090", "", interval=0.05, timeout=5.0,
                              getter=lambda url, timeout, limit: _replay_any(replay, url),
                              wall=lambda: replay.recording["now"])
    app = FleetApp(source)
    try:
        async with app.run_test(size=(120, 24)) as pilot:
            while app.hosts_screen.table.row_count < 3:
                await pilot.pause(0.02)
            while not entered.is_set():
                await pilot.pause(0.02)
            header = next(line for line in screen_lines(app) if "HOST" in line)
            assert "TOP FINDING ▼" in header and "HOST ▼" not in header
            await pilot.press("s")  # sort by host: the header's arrow moves
            await pilot.pause()
            header = next(line for line in screen_lines(app) if "HOST" in line)
            assert "HOST ▼" in header, header
            assert stuck.is_set() and len(rounds) == 2  # drawn while the parse was still stuck
            release.set()
            await pilot.press("q")
    finally:
        release.set()
