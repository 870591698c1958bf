"""`hwtop record` keeps what changed when, and a replay tells it as the live run did: the changes before the
recording began (on its first line) and those during it (from each line's findings). Recordings made before
findings were grouped still load and tell theirs."""

from __future__ import annotations

import json

import pytest

from hwtop.model.frame import Frame
from hwtop.recording.replay import ReplaySource
from hwtop.recording.store import Recorder, load
from hwtop.session.session import Session
from tests.advice_timeline import Timeline, rank, workload
from tests.factories import ScriptedSource


def live_frames(waits: list[float]) -> list[Frame]:
    """A job waiting on data for a while, then fed: gpu-starved raised, then cleared."""
    t = Timeline()
    snapshots = [t.tick(workload=workload(rank(0, wait=w))) for w in waits]
    session = Session(ScriptedSource(snapshots[:1]))
    return [session.advance(lambda s=snapshot: s) for snapshot in snapshots]


def record(path, frames: list[Frame]) -> None:
    recorder = Recorder(str(path), 1.0, "trainbox")
    for frame in frames:
        recorder.write(frame)
    recorder.close()


def replayed_to_the_end(path) -> Frame:
    source = ReplaySource(load(str(path)))
    session = Session(source)
    session.tick()
    return session.advance(lambda: source.seek_to(source.length_s))


def test_a_replay_tells_the_changes_before_and_during_the_recording(tmp_path) -> None:
    live = live_frames([0.85] * 12 + [0.05] * 30)
    raised = next(i for i, f in enumerate(live) if f.findings)
    path = tmp_path / "late.jsonl.gz"
    record(path, live[raised + 2:])  # recording began after gpu-starved was raised
    told = live[-1].timeline
    assert [(c.what, c.id) for c in told] == [("raised", "gpu-starved"), ("cleared", "gpu-starved")]
    assert replayed_to_the_end(path).timeline == told
    source = ReplaySource(load(str(path)))
    session = Session(source)
    assert session.tick().timeline == told[:1]  # at the first line: only what had happened by then


def test_a_recording_of_ungrouped_findings_still_loads_and_tells_its_changes(tmp_path) -> None:
    live = live_frames([0.85] * 12 + [0.05] * 30)
    path = tmp_path / "old.jsonl"
    record(path, live)
    old_keys = ("cause", "covers", "count", "measure", "held_at")
    lines = path.read_text().splitlines()
    rewritten = [lines[0]]
    for line in lines[1:]:
        data = json.loads(line)
        data.pop("timeline", None)
        data["findings"] = [{k: v for k, v in f.items() if k not in old_keys} for f in data["findings"]]
        rewritten.append(json.dumps(data))
    path.write_text("\n".join(rewritten) + "\n")
    end = replayed_to_the_end(path)
    assert [(c.what, c.id, c.scope) for c in end.timeline] == [("raised", "gpu-starved", "job"),
                                                                 ("cleared", "gpu-starved", "job")]
    recording = load(str(path))
    shown = next(recording.frame(i) for i in range(len(recording)) if recording.frame(i).findings)
    assert shown.findings[0].covers == () and shown.findings[0].held_at is None


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_hwtop_replay_shows_the_recordings_timeline_on_the_advice_screen(tmp_path) -> None:
    from hwtop.tui.advice_screen import AdviceScreen
    from hwtop.tui.app import HwtopApp

    live = live_frames([0.85] * 12 + [0.05] * 30)
    path = tmp_path / "run.jsonl"
    record(path, live)
    source = ReplaySource(load(str(path)), interval_s=0.05, speed=64.0)
    app = HwtopApp(source, interval=0.05)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.first_frame.wait()
        for _ in range(200):
            await pilot.pause(0.05)
            if source.at_end:
                break
        await pilot.press("p", "a", "a")
        await pilot.pause()
        assert isinstance(app.screen, AdviceScreen)
        body = str(app.screen.body.render())
        assert "raised  WARNING gpu-starved · job" in body and "cleared gpu-starved · job after" in body
