"""A replay at 80x24: the header keeps the playback state whole (REPLAY, the clock, END, PAUSED) and the
workload pane does not offer to stop a recorded job."""

from __future__ import annotations

import pytest

from hwtop.recording.replay import ReplaySource
from hwtop.recording.store import load
from hwtop.tui.app import HwtopApp
from tests.recording.test_replay import write
from tests.small_screen import screen_lines, started
from tests.tui.screens import story_snapshots


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_the_replay_header_keeps_its_state_whole_at_80x24(tmp_path) -> None:
    path = tmp_path / "story.jsonl.gz"
    snapshots = story_snapshots("dgx-a100:starved", seconds=16, step=2.0)
    write(path, snapshots)
    app = HwtopApp(ReplaySource(load(str(path))), interval=30.0)
    async with app.run_test(size=(80, 24)) as pilot:
        await started(app, pilot)
        await pilot.press(*["full_stop"] * len(snapshots))  # step to the end: stepping pauses
        await pilot.pause()
        lines = screen_lines(app)
        header = lines[0]
        assert header.rstrip().endswith("REPLAY 1x 00:00:16/00:00:16 END  PAUSED"), header
        assert header.startswith(" hwtop  dgx-a100-demo │ ") and len(header) <= 80
        workload = next(line for line in lines if "Workload" in line)
        assert "x stop" not in workload and "Workload · starved" in workload
        assert "x Stop" not in lines[-1]
