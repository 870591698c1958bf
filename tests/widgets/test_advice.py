"""The advice pane never contradicts the panels beside it: a finding whose condition stopped holding, waiting
out its clear time, is drawn as clearing with the time its evidence is from."""

from __future__ import annotations

import time

import pytest

from hwtop.tui.app import HwtopApp
from hwtop.widgets.advice import AdvicePanel
from tests.advice_timeline import Timeline
from tests.factories import ScriptedSource


@pytest.fixture
def utc(monkeypatch):
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def cooled_down_frames():
    """GPU0 of an RTX 3090 held back by heat for 8 s, then cool for 4 s (gpu-throttled clears after 10 s)."""
    t = Timeline("rtx3090")
    t.fake.force_reasons(0, "sw_thermal")
    frames = [t.tick() for _ in range(8)]
    t.fake.force_reasons(0)
    return frames + [t.tick() for _ in range(4)]


def warmed_app(frames) -> HwtopApp:
    app = HwtopApp(ScriptedSource(frames))
    for frame in frames[:-1]:
        app.session.advance(lambda frame=frame: frame)
    return app


def text_of(panel: AdvicePanel) -> str:
    return "\n".join(line.plain for line in panel.lines(panel.content_size.width))


async def test_a_finding_past_its_condition_shows_as_clearing_with_its_time(utc) -> None:
    frames = cooled_down_frames()
    app = warmed_app(frames)
    async with app.run_test(size=(160, 40)) as pilot:
        await app.first_frame.wait()
        await pilot.pause()
        panel = app.query_one(AdvicePanel)
        (finding,) = panel.findings
        assert finding.id == "gpu-throttled" and finding.held_at == frames[7].time
        text = text_of(panel)
        held = time.strftime("%H:%M:%S", time.gmtime(frames[7].time))
        assert "GPU0 clocks throttled · GPU0 · not seen for 4 s [gpu-throttled]" in text
        assert f"at {held}: GPU0 clocks held back by SW thermal" in text
        assert 0 not in app.gpu_panel.marked  # the GPU recovered: not marked red beside a finding that waits


def test_clearing_look(snap_compare, utc) -> None:
    async def first_frame(pilot) -> None:
        await pilot.app.first_frame.wait()
        await pilot.pause()

    assert snap_compare(warmed_app(cooled_down_frames()), terminal_size=(120, 32), run_before=first_frame)
