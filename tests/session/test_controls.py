"""The Session offers the controls its source supports: a replay's step/seek/speed, a live machine's workload
and job focus; none of them for a test's scripted source."""

from __future__ import annotations

import pytest

from hwtop.demo.machine import demo_sampler
from hwtop.recording.replay import ReplaySource
from hwtop.recording.store import load
from hwtop.session.controls import ControlRefused, FollowWorkload, ReplayState
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


LAUNCHER = """
import os, subprocess, sys
ranks = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                          env={**os.environ, "RANK": str(r), "LOCAL_RANK": str(r), "WORLD_SIZE": "2",
                               "LOCAL_WORLD_SIZE": "2"}) for r in range(2)]
print("ready", flush=True)
for rank in ranks:
    rank.wait()
"""


class StandInMonitor:
    """Stands for workload/monitor.py's WorkloadMonitor (torch aside): a launcher that starts two ranks with the
    environment workload/job.py's spawn_ranks gives them, and telemetry that says it runs (and, once `stepped`,
    that its ranks took a step)."""

    stepped = False

    def __init__(self, args: list[str]) -> None:
        import subprocess
        import sys

        self.process = subprocess.Popen([sys.executable, "-c", LAUNCHER], stdout=subprocess.PIPE, text=True,
                                        start_new_session=True)
        assert self.process.stdout is not None and self.process.stdout.readline() == "ready\n"

    @property
    def root(self) -> int:
        return self.process.pid

    def state(self):  # noqa: ANN201 - a WorkloadState
        from hwtop.model.workload import RankState, WorkloadState

        ranks = tuple(RankState(r, None, 1 if self.stepped else 0, None, None, None, None, None, None, None, None)
                      for r in range(2))
        return WorkloadState("balanced", "running" if self.process.poll() is None else "stopped", None, ranks, None)

    def stop(self) -> None:
        import os
        import signal

        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()


def test_the_embedded_workload_is_focused_as_a_job_from_its_pid_unless_the_user_focused_another(monkeypatch) -> None:
    """From its first step, the workload is the focused job (its ranks found from their environment, as --pid
    finds a torchrun job's); a job the user focuses replaces it, and the next workload leaves the user's job."""
    import subprocess
    import sys

    import hwtop.workload.launcher
    import hwtop.workload.monitor

    monkeypatch.setattr(hwtop.workload.launcher, "torch_missing", lambda: None)
    monkeypatch.setattr(hwtop.workload.monitor, "WorkloadMonitor", StandInMonitor)
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    sampler = Sampler(gpu=None)
    session = Session(sampler)
    try:
        workload, focus = session.workload, session.job
        assert workload is not None and focus is not None
        workload.start(["--scenario", "balanced"])
        assert isinstance(sampler.workload, StandInMonitor)
        assert session.tick().snapshot.job is None and not focus.focused  # starting up: not yet its steady state
        sampler.workload.stepped = True
        job = session.tick().snapshot.job
        assert job is not None and job.roots == (sampler.workload.root,) and job.status == "running"
        assert [(p.role, p.rank) for p in job.processes if p.rank is not None] == [("rank 0", 0), ("rank 1", 1)]
        assert workload.stop()
        focus.focus(other.pid)  # the user's own choice
        workload.start(["--scenario", "balanced"])
        assert isinstance(sampler.workload, StandInMonitor)
        sampler.workload.stepped = True
        mine = session.tick().snapshot.job
        assert mine is not None and mine.roots == (other.pid,)
        assert workload.stop()
        fresh = Session(Sampler(gpu=None))  # the user focuses another job while the workload starts up
        try:
            assert fresh.workload is not None and fresh.job is not None
            fresh.workload.start(["--scenario", "balanced"])
            fresh.job.focus(other.pid)
            started = fresh.source.workload  # type: ignore[attr-defined]
            assert isinstance(started, StandInMonitor)
            started.stepped = True
            mine = fresh.tick().snapshot.job
            assert mine is not None and mine.roots == (other.pid,)
        finally:
            fresh.close()
    finally:
        session.close()
        other.kill()
        other.wait()


def test_a_focus_while_a_tick_reads_the_job_closes_that_job_only_once_the_read_is_over(monkeypatch) -> None:
    """The app ticks on a worker thread (asyncio.to_thread) while f focuses another job on the UI thread. The job
    the tick is reading is closed when that read is over, not under it (its stack sampler's py-spy children
    ended mid-read), the UI thread does not wait for the tick, and the next tick reads the new job."""
    import subprocess
    import sys
    import threading

    from hwtop.demo.ranks import DemoRanks

    reading, release, in_read = threading.Event(), threading.Event(), threading.Event()
    closed: list[bool] = []  # for each close: whether a read was in flight
    read = DemoRanks.read

    def blocking_read(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        in_read.set()
        reading.set()
        try:
            assert release.wait(30)
            return read(self, *args, **kwargs)
        finally:
            in_read.clear()

    monkeypatch.setattr(DemoRanks, "read", blocking_read)
    monkeypatch.setattr(DemoRanks, "close", lambda self: closed.append(in_read.is_set()))
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    session = Session(demo_sampler("dgx-a100:straggler"))  # its story's ranks are the focused job
    try:
        focus = session.job
        assert focus is not None
        tick = threading.Thread(target=session.tick)
        tick.start()
        assert reading.wait(30)  # the tick is inside the story job's read
        focus.focus(other.pid)  # the UI thread meanwhile: returns at once
        closed_during_the_read = list(closed)
        assert focus.focused  # the focus is taken, to be applied when the tick ends
        release.set()
        tick.join(30)
        assert not tick.is_alive()
        assert closed_during_the_read == [] and closed == [False]
        job = session.tick().snapshot.job
        assert job is not None and job.roots == (other.pid,)
    finally:
        release.set()
        session.close()
        other.kill()
        other.wait()


def test_a_samplers_sources_are_read_only_outside_the_session() -> None:
    """What a sampler reads is given when it is made or sent as a command, never assigned from outside."""
    sampler = demo_sampler("dgx-a100")
    try:
        for name in ("job", "workload", "focused"):
            with pytest.raises(AttributeError):
                setattr(sampler, name, None)
    finally:
        sampler.close()


class RecordedRunner:
    """A workload runner that records whether it was stopped (no process: the sampler's bookkeeping is tested)."""

    def __init__(self) -> None:
        self.stopped = False

    @property
    def root(self) -> None:
        return None

    def state(self):  # noqa: ANN201 - a WorkloadState
        from hwtop.model.workload import WorkloadState

        return WorkloadState("balanced", "stopped" if self.stopped else "running", None, (), None)

    def stop(self) -> None:
        self.stopped = True


def test_a_second_start_while_the_first_waits_for_the_tick_is_refused_and_none_is_left_running(monkeypatch) -> None:
    """w twice while a tick holds the lock: the first start is already the workload (the second refused), and a
    runner replaced by another is stopped, never left running unwatched."""
    import threading

    import hwtop.workload.launcher
    import hwtop.workload.monitor

    monkeypatch.setattr(hwtop.workload.launcher, "torch_missing", lambda: None)
    monkeypatch.setattr(hwtop.workload.monitor, "WorkloadMonitor", lambda args: RecordedRunner())
    sampler = Sampler(gpu=None)
    session = Session(sampler)
    try:
        workload = session.workload
        assert workload is not None
        with sampler._lock:  # a tick in flight  # noqa: SLF001
            workload.start(["--scenario", "balanced"])
            first = sampler.workload
            assert isinstance(first, RecordedRunner) and workload.running
            with pytest.raises(ControlRefused):
                workload.start(["--scenario", "balanced"])
            second = RecordedRunner()
            sampler.send(FollowWorkload(second))  # a runner sent beside it all the same
        session.tick()
        assert sampler.workload is second and first.stopped and not second.stopped
        done = threading.Event()
        threading.Thread(target=lambda: (session.close(), done.set())).start()
        assert done.wait(30) and second.stopped
    finally:
        session.close()


def test_close_ends_the_workload_even_while_a_tick_hangs_in_a_driver_call(monkeypatch) -> None:
    """A tick hung in a driver call holds the lock for good: q still stops the job and closes the sources, after
    a bounded wait, instead of waiting on the driver."""
    import threading

    import hwtop.session.sampler as sampler_module

    monkeypatch.setattr(sampler_module, "CLOSE_WAIT_S", 0.1)
    sampler = Sampler(gpu=None)
    runner = RecordedRunner()
    sampler.send(FollowWorkload(runner))
    hung, released = threading.Event(), threading.Event()

    def hang() -> None:
        with sampler._lock:  # noqa: SLF001 - the tick's lock, held as a hung tick holds it
            hung.set()
            released.wait(30)

    threading.Thread(target=hang, daemon=True).start()
    assert hung.wait(10)
    closed = threading.Event()
    threading.Thread(target=lambda: (sampler.close(), closed.set()), daemon=True).start()
    try:
        assert closed.wait(10), "close waited on the hung tick"
        assert runner.stopped
    finally:
        released.set()
