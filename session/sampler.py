"""Composes the probes into one immutable Snapshot per tick.

`Sampler.sample()` is blocking (it reads /proc, /sys and NVML); the TUI calls it on a worker thread,
one tick at a time. A probe that raises lands in `Snapshot.errors` and the rest of the snapshot arrives.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from hwtop.model.history import History
from hwtop.model.snapshot import (
    CpuSnapshot,
    DiskSnapshot,
    GpuSnapshot,
    GpuSystem,
    HostInfo,
    MemorySnapshot,
    NicSnapshot,
    NumaSnapshot,
    ProbeError,
    ProcessInfo,
    Snapshot,
    Topology,
)
from hwtop.probes.cpu import CpuProbe
from hwtop.probes.disks import DiskProbe
from hwtop.probes.host import read_host
from hwtop.probes.memory import read_memory
from hwtop.probes.network import NetworkProbe, place_nics
from hwtop.probes.numa import NumaProbe, node_of_cpu
from hwtop.probes.processes import ProcessProbe
from hwtop.session.controls import (
    ALIVE,
    Command,
    Focus,
    FollowWorkload,
    JobReader,
    RefreshTopology,
    WorkloadRunner,
    workload_job,
)
from hwtop.session.sources import NcclRas

if TYPE_CHECKING:
    from hwtop.model.job import JobSnapshot, RankStacks
    from hwtop.model.workload import WorkloadState
    from hwtop.probes.nccl_ras.stopped import GpuSpin
    from hwtop.probes.nccl_ras.watch import RasWatch  # imported only when a job is focused

T = TypeVar("T")


class Guarded(Protocol):
    """A read whose failure is the tick's probe error `name`, the tick going on with `default`."""

    def __call__(self, name: str, read: Callable[[], T], default: Any) -> T: ...  # noqa: ANN401


class GpuProbeLike(Protocol):
    def read(self, processes: tuple[ProcessInfo, ...]) -> tuple[GpuSystem, tuple[GpuSnapshot, ...]]: ...

    def close(self) -> None: ...


CLOSE_WAIT_S = 2.0  # how long close() waits for a tick in flight (after Session.close has waited its own)


class HostReader(Protocol):
    """Where the host side of a snapshot comes from: this machine (RealHost) or a simulated one (demo/host.py),
    so that a demo sampler reads nothing of the real host."""

    def host(self) -> HostInfo: ...

    def memory(self) -> MemorySnapshot: ...

    def numa(self, memory: MemorySnapshot | None) -> NumaSnapshot:
        """The nodes, their memory figures consistent with `memory` (the same tick's): see probes/numa.py."""
        ...

    def cpu(self, node_of_cpu: dict[int, int]) -> CpuSnapshot: ...

    def disks(self) -> tuple[DiskSnapshot, ...]: ...

    def processes(self) -> tuple[ProcessInfo, ...]: ...

    def nics(self) -> tuple[NicSnapshot, ...]: ...


class RealHost:
    """This machine, read by the probes."""

    def __init__(self, root: str = "/", process_limit: int = 60) -> None:
        self.root = root
        self.numa_probe = NumaProbe(root)
        self.cpu_probe = CpuProbe(root=root)
        self.disk_probe = DiskProbe(root)
        self.network_probe = NetworkProbe(root)
        self.process_probe = ProcessProbe(root, limit=process_limit)

    def host(self) -> HostInfo:
        return read_host(self.root)

    def memory(self) -> MemorySnapshot:
        return read_memory(self.root)

    def numa(self, memory: MemorySnapshot | None) -> NumaSnapshot:
        return self.numa_probe.read(memory.total_bytes if memory else None,
                                    memory.available_bytes if memory else None)

    def cpu(self, node_of_cpu: dict[int, int]) -> CpuSnapshot:
        return self.cpu_probe.read(node_of_cpu)

    def disks(self) -> tuple[DiskSnapshot, ...]:
        return self.disk_probe.read()

    def processes(self) -> tuple[ProcessInfo, ...]:
        return self.process_probe.read()

    def nics(self) -> tuple[NicSnapshot, ...]:
        return self.network_probe.read()


PROCESS_TIER_S = 1.9  # a 1 s refresh reads processes every other tick; anything slower, every tick


class Sampler:
    """This machine (or a demo one) read into one Snapshot per `sample()`. Its sources are given at construction
    (session/sources.py says which) and changed afterwards only by commands (`send`), applied under the tick's
    lock: the app's worker thread ticks while the UI thread focuses a job or starts a workload."""

    def __init__(
        self,
        root: str = "/",
        gpu: GpuProbeLike | None = None,
        process_limit: int = 60,
        history_length: int = 120,
        clock: Callable[[], float] = time.time,
        topology_reader: Callable[[], Topology] | None = None,
        host: HostReader | None = None,
        *,
        job: JobReader | None = None,
        workload: WorkloadRunner | None = None,
        nccl_ras: NcclRas | None = None,
        workload_stacks: bool = False,
    ) -> None:
        self.root = root
        self.host: HostReader = host if host is not None else RealHost(root, process_limit)
        self.gpu = gpu
        self.history = History(history_length)
        self._clock = clock
        self._topology_reader = topology_reader
        self._initial_topology_reader = topology_reader
        self._workload = workload  # a WorkloadMonitor once the user starts the job, a demo's story job
        self._job = job  # a JobProbe (probes/job/) while a job is focused (--pid, --job, f)
        self._job_is_workloads = False  # the focused job is the workload's own, found at its first step
        self._follow: WorkloadRunner | None = None  # the workload whose job is focused at its first step (or end)
        self._workload_stacks = workload_stacks  # that job's ranks' stacks sampled (doctor)
        self.topology: Topology | None = None  # read once (first tick) and on refresh, kept in every snapshot
        self._last_time: float | None = None
        self._last_processes: tuple[ProcessInfo, ...] = ()
        self._processes_at: float | None = None
        self._process_reads = 0
        self._lock = threading.Lock()  # the tick's: ticks never overlap, and commands apply between them
        self._mail: list[Command] = []  # commands sent, not yet applied (guarded by _mail_lock)
        self._mail_lock = threading.Lock()
        # --- NCCL RAS: the focused job's NCCL view (probes/nccl_ras/watch.py) ---
        self.nccl_ras = nccl_ras if nccl_ras is not None else NcclRas()
        self._ras: tuple[JobReader, RasWatch, GpuSpin] | None = None  # the job's GPUs busy at idle power beside it

    @property
    def simulated(self) -> bool:
        """A demo machine: its pids are not this machine's, so nothing may signal or focus them."""
        return not isinstance(self.host, RealHost)

    @property
    def cpu(self) -> CpuProbe | None:
        """The real CPU probe (its one-off static read), None on a simulated host."""
        return self.host.cpu_probe if isinstance(self.host, RealHost) else None

    @property
    def workload(self) -> WorkloadRunner | None:
        """The workload whose telemetry each snapshot carries (the user's, or a demo story's job): one started and
        waiting for the tick in flight to end is already the workload, so a second start is refused."""
        with self._mail_lock:
            sent = [command.runner for command in self._mail if isinstance(command, FollowWorkload)]
        return sent[-1] if sent else self._workload

    @property
    def job(self) -> JobReader | None:
        """The focused job, read each tick."""
        return self._job

    @property
    def focused(self) -> bool:
        """A job is focused, or will be once the tick in flight ends."""
        with self._mail_lock:
            return self._job is not None or any(isinstance(command, Focus) for command in self._mail)

    # Commands ------------------------------------------------------------------------------------------------

    def send(self, command: Command) -> None:
        """Apply `command` under the tick's lock: now when no tick is in flight, else as soon as it ends (the
        caller never waits for a tick)."""
        with self._mail_lock:
            self._mail.append(command)
        self._deliver()

    def _deliver(self) -> None:
        """Apply the commands sent, if the tick's lock is free. Whoever holds it delivers after releasing it, so a
        command sent while a tick runs is applied when that tick ends."""
        while self._mail and self._lock.acquire(blocking=False):
            try:
                self._apply_mail()
            finally:
                self._lock.release()

    def _apply_mail(self) -> None:
        """Under the tick's lock."""
        with self._mail_lock:
            mail, self._mail = self._mail, []
        for command in mail:
            if isinstance(command, Focus):
                self._focus(command.job, workloads=False)
                self._follow = None  # the user's choice: the workload's own job is not focused later
            elif isinstance(command, FollowWorkload):
                if self._workload is not None and self._workload is not command.runner:
                    self._workload.stop()  # never two: the one replaced would be left running, unwatched
                self._workload = command.runner
                self._follow = command.runner if self._job is None or self._job_is_workloads else None
            elif isinstance(command, RefreshTopology):
                self._topology_reader = self._topology_reader or self._initial_topology_reader
                self.topology = None

    def _focus(self, job: JobReader | None, workloads: bool) -> None:
        previous, self._job, self._job_is_workloads = self._job, job, workloads
        if previous is not None and previous is not job:
            previous.close()  # its stack sampler's py-spy children

    def finish_stacks(self) -> tuple[RankStacks, ...] | None:
        """The focused job's stack samples with the chunks still running; sampling ends (doctor's last look)."""
        with self._lock:
            return self._job.finish_stacks() if self._job is not None else None

    # The tick ------------------------------------------------------------------------------------------------

    def sample(self) -> Snapshot:
        with self._lock:
            self._apply_mail()
            snapshot = self._sample()
        self._deliver()  # what was sent during the tick
        return snapshot

    def _sample(self) -> Snapshot:
        errors: list[ProbeError] = []

        def guarded(name: str, read: Callable[[], T], default: Any) -> T:
            try:
                return read()
            except Exception as error:  # noqa: BLE001 - one failing probe must not stop the tick
                errors.append(ProbeError(name, f"{type(error).__name__}: {error}"))
                return default

        now = self._clock()
        interval = None if self._last_time is None else now - self._last_time
        self._last_time = now
        reader = self.host
        host = guarded("host", reader.host, None)
        memory = guarded("memory", reader.memory, None)
        numa = guarded("numa", lambda: reader.numa(memory), None)
        cpu = guarded("cpu", lambda: reader.cpu(node_of_cpu(numa)), None)
        disks = guarded("disks", reader.disks, ())
        nics = guarded("nics", reader.nics, ())
        processes = self._processes(now, guarded)
        gpu_system, gpus = self._gpus(processes, guarded)
        if self.topology is None and self._topology_reader is not None:
            self.topology = guarded("topology", self._topology_reader, None)
            if self.topology is None:
                self._topology_reader = None  # failed once: say so once, do not retry every tick
        running = self._workload
        workload = guarded("workload", running.state, None) if running is not None else None
        self._follow_workload(workload, guarded)
        topology = self.topology
        if nics and topology is not None:
            nics = guarded("nics", lambda: place_nics(nics, topology), nics)
        job = self._read_job(gpus, workload, now, guarded)
        snapshot = Snapshot(
            time=now, interval_s=interval, host=host, cpu=cpu, memory=memory, numa=numa, disks=disks,
            processes=processes, gpus=gpus, gpu_system=gpu_system, topology=self.topology, workload=workload,
            errors=tuple(errors), job=job, nics=nics,
        )
        self.history.push(snapshot)
        return snapshot

    def _processes(self, now: float, guarded: Guarded) -> tuple[ProcessInfo, ...]:
        """The process list is the costliest probe and changes slowest: re-read at most every PROCESS_TIER_S (the
        first two ticks always, so CPU % exists at once)."""
        if self._process_reads < 2 or self._processes_at is None or now - self._processes_at >= PROCESS_TIER_S:
            self._last_processes = guarded("processes", self.host.processes, ())
            self._processes_at, self._process_reads = now, self._process_reads + 1
        return self._last_processes

    def _gpus(self, processes: tuple[ProcessInfo, ...],
              guarded: Guarded) -> tuple[GpuSystem, tuple[GpuSnapshot, ...]]:
        gpu = self.gpu
        if gpu is None:
            return GpuSystem(False, "GPU probing is off", source="none"), ()
        return guarded("gpu", lambda: gpu.read(processes), (GpuSystem(False, "GPU probe failed"), ()))

    def _follow_workload(self, workload: WorkloadState | None, guarded: Guarded) -> None:
        """The workload's own job becomes the focused one at its first step, or at its end."""
        runner = self._follow
        if runner is None or workload is None:
            return
        if any(r.step for r in workload.ranks) or workload.status not in ALIVE:
            self._follow = None
            self._focus(guarded("job", lambda: workload_job(runner, self._workload_stacks), None), workloads=True)

    def _read_job(self, gpus: tuple[GpuSnapshot, ...], workload: WorkloadState | None, now: float,
                  guarded: Guarded) -> JobSnapshot | None:
        focused = self._job
        if focused is None:
            return None
        job = guarded("job", lambda: focused.read(gpus, workload, now), None)
        if job is not None and not self.simulated:  # what NCCL's RAS service says of the job's ranks
            watch, spin = self._nccl_ras(focused)
            read, spinning = job, spin.update(gpus, job, now)
            job = guarded("nccl-ras", lambda: watch.attach(read, now, spinning), read)
        return job

    def _nccl_ras(self, focused: JobReader) -> tuple[RasWatch, GpuSpin]:
        """The NCCL RAS watch of the focused job, new when the job is, and whether its GPUs spin (the advice's
        collective-hang thresholds): a sign the job stopped, for a release asked only then."""
        if self._ras is None or self._ras[0] is not focused:
            from hwtop.advice.thresholds import TABLE
            from hwtop.probes.nccl_ras.stopped import GpuSpin
            from hwtop.probes.nccl_ras.watch import RasWatch

            if self._ras is not None:
                self._ras[1].close()
            spin = GpuSpin(TABLE["spin_util_percent"].value, TABLE["spin_power_share"].value,
                           TABLE["spin_seconds"].value)
            self._ras = (focused, RasWatch(self.nccl_ras.address, self.nccl_ras.interval_s,
                                           polls=self.nccl_ras.poll), spin)
        return self._ras[1], self._ras[2]

    def close(self) -> None:
        """Stops the workload and closes every source, after the tick in flight; past CLOSE_WAIT_S (a tick hung in
        a driver call) it closes anyway, as Session.close does: the job, py-spy and the terminal are not left to it."""
        locked = self._lock.acquire(timeout=CLOSE_WAIT_S)
        try:
            self._apply_mail()  # a job focused meanwhile is closed below with the rest
        finally:
            if locked:
                self._lock.release()
        if self._workload is not None:
            self._workload.stop()
        if self.gpu is not None:
            self.gpu.close()
        if self._job is not None:
            self._job.close()  # a focused job's stack sampler: its py-spy children
        if self._ras is not None:  # the NCCL RAS query thread
            self._ras[1].close()
