"""The Session offers the controls its source supports: a replay's step/seek/speed, a live machine's workload
and job focus; none of them for a test's scripted source."""

from __future__ import annotations

import pytest

from hwtop.demo.machine import demo_sampler
from hwtop.recording.replay import ReplaySource
from hwtop.recording.store import load
from hwtop.session.controls import ControlRefused, ReplayState
from hwtop.session.sampler import Sampler
from hwtop.session.session import Session
from tests.factories import ScriptedSource, demo_snapshots, host_snapshot
from tests.recording.test_replay import write


def test_a_replay_offers_step_seek_and_speed_and_nothing_live(tmp_path) -> None:
    path = tmp_path / "run.jsonl"
    snapshots = demo_snapshots("gtx1660s", count=6)
    write(path, snapshots)
    session = Session(ReplaySource(load(str(path))))
    assert session.workload is None and session.job is None and not session.simulated
    replay = session.replay
    assert replay is not None
    first = session.tick()
    assert replay.state() == ReplayState(1.0, 0.0, snapshots[-1].time - snapshots[0].time, False)
    stepped = replay.step(2)
    assert stepped.snapshot.time == snapshots[2].time and session.latest is stepped
    assert replay.seek(-100).snapshot.time == first.snapshot.time
    replay.change_speed(4)
    assert replay.state().speed == 4.0
    replay.step(10)
    assert replay.state().at_end
    assert not session.refresh_topology()


def test_a_scripted_source_offers_no_controls() -> None:
    session = Session(ScriptedSource([host_snapshot()]))
    assert (session.replay, session.workload, session.job, session.simulated) == (None, None, None, False)


def test_a_demo_machine_is_simulated_and_its_story_job_stops_through_the_session() -> None:
    sampler = demo_sampler("dgx-a100:starved")
    session = Session(sampler)
    try:
        assert session.simulated and session.replay is None
        workload = session.workload
        assert workload is not None and workload.running  # the story's job
        assert workload.stop()
    finally:
        session.close()


def test_a_live_machine_focuses_a_process_and_refuses_a_vanished_one() -> None:
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    sampler = Sampler(gpu=None)
    session = Session(sampler)
    try:
        assert not session.simulated and session.replay is None
        job, workload = session.job, session.workload
        assert job is not None and workload is not None
        assert not job.focused and not workload.running and not workload.stop()
        job.focus(child.pid)
        assert job.focused and sampler.job is not None
        assert session.tick().snapshot.job is not None
        with pytest.raises(ControlRefused):
            job.focus(2 ** 22 + 1)  # above pid_max's default: no such process
    finally:
        session.close()
        child.kill()
        child.wait()
