"""doctor's watch: a Session ticked for --seconds (after the workload's first step, when doctor started one),
every finding shown meanwhile tracked by a Timeline that keeps them (advice/timeline.py), with what the report
needs of the job: when it was first seen, its last live view, the stack samples each finding last held with."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from hwtop.advice.thresholds import Thresholds
from hwtop.advice.timeline import Timeline
from hwtop.cli.stop_signals import StopSignals
from hwtop.model.frame import Frame
from hwtop.model.job import JobSnapshot, RankStacks
from hwtop.model.verdict import Verdicts
from hwtop.probes.flight_recorder.ask import ask_dumps
from hwtop.probes.nccl_ras.manners import MIN_INTERVAL_S
from hwtop.session.session import Session

STARTUP_LIMIT_S = 180.0  # a workload that has not reported a step by then has failed to start
ENDED = ("crashed", "finished", "stopped")


def nccl_watch_s(interval_s: float, thresholds: Thresholds) -> float:
    """How long doctor watches a job NCCL's RAS answers for (asked every `interval_s`): the first answer comes an
    interval after libnccl is seen, and a hang needs answers spanning ras_hang_s, one interval of slack."""
    return 2 * max(MIN_INTERVAL_S, interval_s) + thresholds["ras_hang_s"] + 2.0


@dataclass(slots=True)
class Watch:
    """What the watch saw, tick by tick."""

    timeline: Timeline = field(default_factory=lambda: Timeline(keep_s=float("inf"), max_changes=None,
                                                                keep_shown=True))
    ticks: int = 0
    frame: Frame | None = None  # the last
    job_since: float | None = None  # when a job was first seen
    last_running: JobSnapshot | None = None  # the job's last live view (an ended job's has how it ended)
    verdicts: Verdicts | None = None  # its ranks' verdicts in that view, as the rules read them (Frame.verdicts)
    ended_ticks: int = 0  # ticks in a row the job was seen ended
    nccl_seen: bool = False  # NCCL's RAS answered for the job
    nccl_watch_s: float | None = None  # the watch made longer for NCCL's RAS to tell a hang
    samples: dict[tuple[str, str], tuple[RankStacks, ...]] = field(default_factory=dict)  # a finding's last held
    stopped: bool = False  # a signal ended it: no report
    fr_dump: tuple[str, ...] | None = None  # --fr-dump: what asking the ranks for their dumps said (None: not asked)

    def see(self, frame: Frame) -> None:
        """One tick: its findings tracked, the job's figures kept."""
        snapshot = frame.snapshot
        self.ticks, self.frame = self.ticks + 1, frame
        self.timeline.update(snapshot.time, frame.findings)
        job = snapshot.job
        if job is None:
            return
        if self.job_since is None:
            self.job_since = snapshot.time
        self.ended_ticks = self.ended_ticks + 1 if job.status == "ended" else 0
        if job.status == "running":
            self.last_running, self.verdicts = job, frame.verdicts
        for finding in frame.findings:
            if finding.held_at in (None, snapshot.time):
                self.samples[finding.key] = job.stacks


def run_watch(session: Session, seconds: float, interval: float, stop: StopSignals, workload_started: bool,
              nccl_interval_s: float, fr_dump: bool = False) -> Watch:
    """Ticks `session` for `seconds`, or until its job has ended (two ticks in a row) or `stop` is asked; first,
    when doctor started the workload, until its first step (its start-up is not its steady state). A job that
    NCCL's RAS answers for is watched long enough to tell a hang. With `fr_dump` (--fr-dump), the job's ranks are
    asked for their Flight Recorder dumps once, at the first tick that has read them all (at the end, whatever it
    has, where none does)."""
    seen = Watch()
    started = time.monotonic()
    if workload_started:
        _wait_for_first_step(session, interval, stop, started)
    if stop.asked:
        seen.stopped = True
        return seen
    end = time.monotonic() + seconds
    while True:
        frame = session.tick()
        seen.see(frame)
        job = frame.snapshot.job
        if fr_dump and seen.fr_dump is None and job is not None and ranks_known(job):
            seen.fr_dump = ask_dumps(job.ranks)
        if job is not None and job.nccl is not None and not seen.nccl_seen:
            seen.nccl_seen = True
            longer = nccl_watch_s(nccl_interval_s, session.thresholds)
            if longer > seconds:
                end, seen.nccl_watch_s = max(end, started + longer), longer
        if time.monotonic() >= end or seen.ended_ticks >= 2 or stop.asked:
            break  # the watch is over, a job that ended has nothing more to show, or a stop was asked
        time.sleep(max(0.0, min(interval, end - time.monotonic())))  # a signal's stop waits for this tick
    seen.stopped = stop.asked  # checked here: a stop while the report is made cuts nothing short
    if fr_dump and seen.fr_dump is None and not seen.stopped:  # no tick saw every rank: ask those seen, say so
        job = seen.frame.snapshot.job if seen.frame is not None else None
        seen.fr_dump = ask_dumps(job.ranks if job is not None else ())
    return seen


def ranks_known(job: JobSnapshot) -> bool:
    """The running job's ranks on this host have all been read: as many as its LOCAL_WORLD_SIZE (one where its
    ranks' environment sets none)."""
    if job.status != "running":
        return False
    local = sum(1 for r in job.ranks if not r.nccl_only and r.pid is not None)
    want = next((p.local_world_size for p in job.processes if p.rank is not None and p.local_world_size), 1)
    return local >= want


def _wait_for_first_step(session: Session, interval: float, stop: StopSignals, started: float) -> None:
    workload = session.workload
    while workload is not None:
        state = workload.state()
        if state is None or any(r.step for r in state.ranks) or state.status in ENDED or \
                time.monotonic() - started > STARTUP_LIMIT_S or stop.asked:
            return
        session.tick()
        time.sleep(interval)
