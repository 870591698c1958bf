"""`Session.tick() -> Frame`: the one place where a tick happens. It owns the snapshot source (the live
sampler, a demo, or a recording), its ring history and the advice engine with its hysteresis. The app, the
exporter, `doctor`, `record` and `snapshot` all take Frames from it, so each asks the rules the same question
and gets the same answer.

A Session is driven from one thread at a time: the lock makes a second caller wait rather than interleave
(the app's worker and a replay step, say), and makes close() wait for a tick in flight, so that NVML is never
shut down under a running call (the app quits while its worker thread is inside a tick).

The engine, and with it every rule, is imported at the first tick that advises: the monitor's first frame is a
tick without advice (`tick(advise=False)`), and the next tick advises that snapshot before its own."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from hwtop.advice.thresholds import Thresholds
from hwtop.advice.timeline import Timeline
from hwtop.model.finding import Change, Finding
from hwtop.model.frame import Frame
from hwtop.model.history import History
from hwtop.model.snapshot import Snapshot
from hwtop.session.controls import (
    JobControl,
    JobFocus,
    LiveSource,
    Player,
    RefreshTopology,
    Replay,
    ReplayControl,
    Workload,
    WorkloadControl,
)

if TYPE_CHECKING:
    from hwtop.advice.engine import AdviceEngine
    from hwtop.model.job import RankStacks

CLOSE_WAIT_S = 5.0  # how long close() waits for a tick in flight; past it (a hung driver call) it closes anyway


class SessionClosed(RuntimeError):
    """A tick asked of a closed session: its source has let go of NVML, the job and the workload."""


class SnapshotSource(Protocol):
    """Anything that yields one Snapshot per call: the live Sampler, a replay, a test's script."""

    history: History

    def sample(self) -> Snapshot: ...

    def close(self) -> None: ...


@runtime_checkable
class RecordedAdvice(Protocol):
    """A source that also knows the findings shown when its current snapshot was recorded."""

    def recorded_findings(self) -> tuple[Finding, ...] | None: ...


@runtime_checkable
class RecordedTimeline(Protocol):
    """A source that knows what was raised and cleared up to its current snapshot (a whole recording's)."""

    def recorded_timeline(self) -> tuple[Change, ...] | None: ...


@runtime_checkable
class StackFinisher(Protocol):
    """A source whose focused job samples its ranks' stacks (the Sampler)."""

    def finish_stacks(self) -> tuple[RankStacks, ...] | None: ...


class Session:
    def __init__(self, source: SnapshotSource, thresholds: Thresholds | None = None) -> None:
        self.source = source
        self.thresholds = thresholds or Thresholds()  # the rules' and the panels' (a config file's)
        self._engine: AdviceEngine | None = None  # made at the first tick that advises (see `engine`)
        self._unadvised: Snapshot | None = None  # a snapshot shown without advice, advised at the next tick
        self._engine_lock = threading.Lock()
        self.timeline = Timeline()  # what was raised and cleared, derived from each tick's findings
        self.latest: Frame | None = None
        self._lock = threading.Lock()
        self._closed = False
        self.paused = False  # the app's ticks wait while paused (p); a replay's step pauses it
        # The controls the source supports, None for the others (session/controls.py).
        live = source if isinstance(source, LiveSource) else None
        self.replay: ReplayControl | None = Replay(source, self.advance) if isinstance(source, Player) else None
        self.workload: WorkloadControl | None = Workload(live) if live is not None else None
        self.job: JobControl | None = JobFocus(live) if live is not None else None
        self.simulated = live is not None and live.simulated  # a demo machine: its pids are not this machine's
        # what the source can tell, asked once (a runtime Protocol's isinstance walks its members: each tick twice)
        self._recorded = source if isinstance(source, RecordedAdvice) else None
        self._told = source if isinstance(source, RecordedTimeline) else None

    def refresh_topology(self) -> bool:
        """Re-read the machine's layout at the next tick; False where the source has none to re-read."""
        if not isinstance(self.source, LiveSource):
            return False
        self.source.send(RefreshTopology())
        return True

    def finish_stacks(self) -> tuple[RankStacks, ...] | None:
        """The focused job's stack samples with the chunks still running; sampling ends (doctor's last look, after
        its last tick). None where the source has no such job."""
        return self.source.finish_stacks() if isinstance(self.source, StackFinisher) else None

    @property
    def engine(self) -> AdviceEngine:
        """The rules and their hysteresis, imported and made on first use (the worker's tick, or a screen that
        names what the rules watch: made once either way)."""
        with self._engine_lock:
            if self._engine is None:
                from hwtop.advice.engine import AdviceEngine

                self._engine = AdviceEngine(self.thresholds)
            return self._engine

    @property
    def history(self) -> History:
        return self.source.history

    @property
    def watching(self) -> tuple[str, ...]:
        """What the rules watch, for the pane's 'no problems seen' line."""
        return self.engine.watching

    def tick(self, advise: bool = True) -> Frame:
        """Sample once, advise on it, and return the Frame. Without `advise` (the monitor's first frame: no rule
        imported yet) the Frame says it was not advised, and the next tick advises this snapshot first, so the
        rules' window and hold times are those of a session that advised every tick."""
        return self.advance(self.source.sample, advise)

    def advance(self, move: Callable[[], Snapshot], advise: bool = True) -> Frame:
        """A tick whose snapshot comes from `move` (a replay's step or seek) rather than `sample`."""
        with self._lock:
            if self._closed:
                raise SessionClosed("the session is closed")
            snapshot = move()
            recorded = self._recorded.recorded_findings() if self._recorded is not None else None
            if recorded is None and not advise:
                self._unadvised = snapshot
                self.latest = Frame(snapshot, advised=False, history=self.source.history.frozen())
                return self.latest
            unadvised, self._unadvised = self._unadvised, None
            if unadvised is not None and recorded is None and unadvised.time <= snapshot.time:
                self.timeline.update(unadvised.time, self.engine.update(unadvised))
            findings = recorded if recorded is not None else self.engine.update(snapshot)
            errors = () if recorded is not None else tuple(sorted(self.engine.rule_errors.items()))
            told = self._told.recorded_timeline() if self._told is not None else None
            timeline = self.timeline.update(snapshot.time, findings) if told is None else told
            verdicts = None if recorded is not None else self.engine.verdicts  # the rules' own: one judgement
            frame = Frame(snapshot, findings, errors, recorded=recorded is not None, timeline=timeline,
                          history=self.source.history.frozen(), verdicts=verdicts)
            self.latest = frame
            return frame

    def close(self) -> None:
        """Close the source once, after the tick in flight (if any) has finished."""
        acquired = self._lock.acquire(timeout=CLOSE_WAIT_S)
        try:
            if self._closed:
                return
            self._closed = True
            self.source.close()
        finally:
            if acquired:
                self._lock.release()
