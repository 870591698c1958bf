"""What a user may do to a session besides watching it — pause, a replay's step/seek/speed, the workload, a
focused job — as typed protocols. The Session offers the controls its source supports (None for the others), so
the app asks the Session what it can do instead of probing the source with hasattr and setting its attributes.
A live source is changed by commands (Focus, FollowWorkload, RefreshTopology) that it applies under its tick's
lock, never by setting its attributes from another thread."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from hwtop.model.record import Record

if TYPE_CHECKING:
    from hwtop.model.frame import Frame
    from hwtop.model.job import JobSnapshot, RankStacks
    from hwtop.model.snapshot import GpuSnapshot, Snapshot
    from hwtop.model.workload import WorkloadState

ALIVE = ("starting", "running", "stalled")  # a workload status whose process has not exited


class ControlRefused(Exception):
    """A control that cannot be applied now; its message is the one line to show the user."""


# What a source holds (the Sampler's parts) ------------------------------------------------------------------


class WorkloadRunner(Protocol):
    """A job whose telemetry the sampler copies into each snapshot: workload/monitor.py's WorkloadMonitor,
    demo/job.py's DemoJob. The job itself is read as any attached job is (a JobReader on `root`): the telemetry is
    what it adds."""

    def state(self) -> WorkloadState: ...

    @property
    def root(self) -> int | None:
        """The pid the job was started as, the root a job probe walks its ranks from; None: not on this host."""
        ...

    def stop(self) -> None: ...


@runtime_checkable
class LastWords(Protocol):
    """A workload whose stderr is kept (workload/monitor.py's WorkloadMonitor)."""

    def last_stderr(self, wait_s: float) -> tuple[str, ...]: ...


class JobReader(Protocol):
    """A focused job, read each tick: probes/job/'s JobProbe."""

    def read(self, gpus: tuple[GpuSnapshot, ...] = (), workload: WorkloadState | None = None,
             now: float | None = None) -> JobSnapshot: ...

    def finish_stacks(self) -> tuple[RankStacks, ...] | None:
        """Where each rank's time went, with the samples still being taken; sampling ends (doctor's last look)."""
        ...

    def close(self) -> None: ...


# What may change a live source after it is made: commands the source applies under its tick's lock
# (Sampler.send), now when no tick is in flight, else as soon as the tick in flight ends. The UI thread never waits
# on a tick (a hung driver call may hold one), and a tick never sees its sources change under it: a job closed
# while it is read, the user's focus undone by the workload's job found at its first step, a topology gone for a
# tick.


@dataclass(frozen=True, slots=True)
class Focus:
    """Read this job from now on (the user's f, --pid or --job) and close the one read before; the workload's own
    job never replaces it."""

    job: JobReader


@dataclass(frozen=True, slots=True)
class FollowWorkload:
    """A workload the user started: its telemetry is read each tick, and its job is focused at its first step (or
    its end) unless the user focused another."""

    runner: WorkloadRunner


@dataclass(frozen=True, slots=True)
class RefreshTopology:
    """Read the machine's layout again at the next tick (a GPU or NIC added, a link retrained)."""


Command = Focus | FollowWorkload | RefreshTopology


@runtime_checkable
class LiveSource(Protocol):
    """A source that reads a machine (the Sampler): it can run a workload, focus a job and re-read its topology,
    each a command it applies under its tick's lock (above). A simulated one (a demo machine) has
    pids that are not this machine's."""

    @property
    def workload(self) -> WorkloadRunner | None: ...

    @property
    def focused(self) -> bool: ...

    @property
    def simulated(self) -> bool: ...

    def send(self, command: Command) -> None: ...


@runtime_checkable
class Player(Protocol):
    """A recording played back (recording/replay.py's ReplaySource)."""

    @property
    def speed(self) -> float: ...

    @property
    def position_s(self) -> float: ...

    @property
    def length_s(self) -> float: ...

    @property
    def at_end(self) -> bool: ...

    def step(self, ticks: int) -> Snapshot: ...

    def seek(self, seconds: float) -> Snapshot: ...

    def set_speed(self, speed: float) -> None: ...


# What the Session offers the app ---------------------------------------------------------------------------


class ReplayState(Record, frozen=True):
    """Where a replay stands, for the header: `REPLAY 2x 00:00:01/00:00:09 END`."""

    speed: float
    position_s: float
    length_s: float
    at_end: bool


class ReplayControl(Protocol):
    def state(self) -> ReplayState: ...

    def step(self, ticks: int) -> Frame: ...

    def seek(self, seconds: float) -> Frame: ...

    def change_speed(self, factor: float) -> None: ...


class WorkloadControl(Protocol):
    @property
    def running(self) -> bool: ...

    def state(self) -> WorkloadState | None: ...

    def start(self, args: list[str]) -> None: ...

    def stop(self) -> bool: ...

    def last_stderr(self, wait_s: float = 2.0) -> tuple[str, ...]: ...


class JobControl(Protocol):
    @property
    def focused(self) -> bool: ...

    def focus(self, pid: int) -> None: ...


# The implementations -------------------------------------------------------------------------------------------

Advance = Callable[[Callable[[], "Snapshot"]], "Frame"]  # Session.advance: a tick whose snapshot comes from a move


class Replay:
    """Step, seek and speed of a played recording; each move is a tick of the Session (advice and history)."""

    def __init__(self, player: Player, advance: Advance) -> None:
        self._player, self._advance = player, advance

    def state(self) -> ReplayState:
        p = self._player
        return ReplayState(p.speed, p.position_s, p.length_s, p.at_end)

    def step(self, ticks: int) -> Frame:
        return self._advance(lambda: self._player.step(ticks))

    def seek(self, seconds: float) -> Frame:
        return self._advance(lambda: self._player.seek(seconds))

    def change_speed(self, factor: float) -> None:
        self._player.set_speed(self._player.speed * factor)


def workload_job(runner: WorkloadRunner, sample_stacks: bool = False) -> JobReader | None:
    """The embedded job as a job like any attached one: a job probe on the pid it was started as, which finds its
    ranks and their DataLoader workers as `--pid` finds a torchrun job's (from their environment). None when there
    is no such pid or it cannot be read (it already ended)."""
    from hwtop.probes.job import JobError, JobProbe

    if runner.root is None:
        return None
    probe = JobProbe(roots=(runner.root,), sample_stacks=sample_stacks)
    try:
        probe.check()
    except JobError:
        return None
    return probe


class Workload:
    """The live source's workload: at most one, started by the user (w, --workload), stopped by x or on exit.
    Once it has taken its first step it is also the focused job (unless the user focused another), as f on its
    process would make it: its start-up (torch's imports, the ranks' spawn, their memory filling) is not its
    steady state, and the job rules would judge it as one (doctor waits for the first step too)."""

    def __init__(self, source: LiveSource) -> None:
        self._source = source

    @property
    def running(self) -> bool:
        current = self._source.workload
        return current is not None and current.state().status in ALIVE

    def state(self) -> WorkloadState | None:
        current = self._source.workload
        return current.state() if current is not None else None

    def start(self, args: list[str]) -> None:
        from hwtop.workload.launcher import torch_missing

        if self.running:
            raise ControlRefused("a workload is running: x stops it first")
        missing = torch_missing()
        if missing:
            raise ControlRefused(missing)
        from hwtop.workload.monitor import WorkloadMonitor  # lazy: no cost until a job is started

        self._source.send(FollowWorkload(WorkloadMonitor(args)))

    def stop(self) -> bool:
        """Stop the job's whole process group; False when there was none. Not a command waiting for the tick in
        flight: signalling the group is safe beside a tick's read of its telemetry, and the app's exit watchdog
        stops it while a hung tick holds the lock."""
        current = self._source.workload
        if current is None:
            return False
        current.stop()
        return True

    def last_stderr(self, wait_s: float = 2.0) -> tuple[str, ...]:
        """An ended job's last stderr lines, once its output has been drained (its state keeps three, and a
        launcher's "rank N ... terminated with exit code X" comes last, after the rank's traceback)."""
        current = self._source.workload
        return current.last_stderr(wait_s) if isinstance(current, LastWords) else ()


class JobFocus:
    """The live source's focused job (f on a process, --pid, --job)."""

    def __init__(self, source: LiveSource) -> None:
        self._source = source

    @property
    def focused(self) -> bool:
        return self._source.focused

    def focus(self, pid: int) -> None:
        """The process and its descendants become the focused job, from the next tick (the one in flight, if any,
        ends on the job it was reading); ControlRefused if it cannot be read."""
        from hwtop.probes.job import JobError, JobProbe

        probe = JobProbe(roots=(pid,))
        try:
            probe.check()
        except JobError as error:
            raise ControlRefused(str(error)) from None
        self._source.send(Focus(probe))
