"""What a user may do to a session besides watching it — pause, a replay's step/seek/speed, the workload, a
focused job — as typed protocols. The Session offers the controls its source supports (None for the others), so
the app asks the Session what it can do instead of probing the source with hasattr and setting its attributes."""

from __future__ import annotations

from collections.abc import Callable
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


class JobReader(Protocol):
    """A focused job, read each tick: probes/job/'s JobProbe."""

    def read(self, gpus: tuple[GpuSnapshot, ...] = (), workload: WorkloadState | None = None,
             now: float | None = None) -> JobSnapshot: ...

    def finish_stacks(self) -> tuple[RankStacks, ...] | None:
        """Where each rank's time went, with the samples still being taken; sampling ends (doctor's last look)."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class LiveSource(Protocol):
    """A source that reads a machine (the Sampler): it can run a workload, focus a job and re-read its topology.
    A simulated one (a demo machine) has pids that are not this machine's."""

    workload: WorkloadRunner | None
    job: JobReader | None
    job_at_first_step: Callable[[], JobReader | None] | None  # the job to focus once the workload has stepped

    @property
    def simulated(self) -> bool: ...

    def refresh_topology(self) -> None: ...


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

    def start(self, args: list[str]) -> None: ...

    def stop(self) -> bool: ...


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
        self._job: JobReader | None = None  # the job reader this control focused on its workload

    @property
    def running(self) -> bool:
        current = self._source.workload
        return current is not None and current.state().status in ALIVE

    def start(self, args: list[str]) -> None:
        from hwtop.workload.launcher import torch_missing

        if self.running:
            raise ControlRefused("a workload is running: x stops it first")
        missing = torch_missing()
        if missing:
            raise ControlRefused(missing)
        from hwtop.workload.monitor import WorkloadMonitor  # lazy: no cost until a job is started

        monitor = WorkloadMonitor(args)
        self._source.workload = monitor
        previous = self._source.job
        if previous is None or previous is self._job:  # a job the user focused stays focused

            def focus() -> JobReader | None:
                self._job = workload_job(monitor)
                return self._job

            self._source.job_at_first_step = focus

    def stop(self) -> bool:
        """Stop the job's whole process group; False when there was none."""
        current = self._source.workload
        if current is None:
            return False
        current.stop()
        return True


class JobFocus:
    """The live source's focused job (f on a process, --pid, --job)."""

    def __init__(self, source: LiveSource) -> None:
        self._source = source

    @property
    def focused(self) -> bool:
        return self._source.job is not None

    def focus(self, pid: int) -> None:
        """The process and its descendants become the focused job; ControlRefused if it cannot be read."""
        from hwtop.probes.job import JobError, JobProbe

        probe = JobProbe(roots=(pid,))
        try:
            probe.check()
        except JobError as error:
            raise ControlRefused(str(error)) from None
        self._source.job_at_first_step = None  # the user's choice: the workload's own job is not focused later
        previous, self._source.job = self._source.job, probe
        if previous is not None:
            previous.close()
