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
from hwtop.session.controls import ALIVE, JobReader, WorkloadRunner

if TYPE_CHECKING:  # NCCL RAS (issue 42): imported only when a job is focused
    from hwtop.probes.nccl_ras.client import Address
    from hwtop.probes.nccl_ras.watch import RasWatch

T = TypeVar("T")


class GpuProbeLike(Protocol):
    def read(self, processes: tuple[ProcessInfo, ...]) -> tuple[GpuSystem, tuple[GpuSnapshot, ...]]: ...

    def close(self) -> None: ...


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
    def __init__(
        self,
        root: str = "/",
        gpu: GpuProbeLike | None = None,
        process_limit: int = 60,
        history_length: int = 120,
        clock: Callable[[], float] = time.time,
        topology_reader: Callable[[], Topology] | None = None,
        host: HostReader | None = None,
    ) -> None:
        self.root = root
        self.host: HostReader = host if host is not None else RealHost(root, process_limit)
        self.gpu = gpu
        self.history = History(history_length)
        self._clock = clock
        self._topology_reader = topology_reader
        self._initial_topology_reader = topology_reader
        self.workload: WorkloadRunner | None = None  # a WorkloadMonitor once the user starts the job, a demo's job
        self.job: JobReader | None = None  # a JobProbe (probes/job/) while a job is focused (--pid, --job, f)
        # the workload's own job (session/controls.py's workload_job), focused at its first step or its end
        self.job_at_first_step: Callable[[], JobReader | None] | None = None
        self.topology: Topology | None = None  # read once (first tick) and on refresh(), kept in every snapshot
        self._last_time: float | None = None
        self._last_processes: tuple[ProcessInfo, ...] = ()
        self._processes_at: float | None = None
        self._process_reads = 0
        self._lock = threading.Lock()  # ticks never overlap, even if two callers race
        # --- NCCL RAS (issue 42): the focused job's NCCL view (probes/nccl_ras/watch.py) ---
        self.nccl_ras_address: Address | None = None  # --nccl-ras HOST:PORT
        self.nccl_ras_interval_s = 10.0
        self._ras: tuple[JobReader, RasWatch] | None = None

    @property
    def simulated(self) -> bool:
        """A demo machine: its pids are not this machine's, so nothing may signal or focus them."""
        return not isinstance(self.host, RealHost)

    @property
    def cpu(self) -> CpuProbe | None:
        """The real CPU probe (its one-off static read), None on a simulated host."""
        return self.host.cpu_probe if isinstance(self.host, RealHost) else None

    def sample(self) -> Snapshot:
        with self._lock:
            return self._sample()

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
        # The process list is the costliest probe and changes slowest: re-read at most every PROCESS_TIER_S
        # (the first two ticks always, so CPU % exists at once).
        if self._process_reads < 2 or self._processes_at is None or now - self._processes_at >= PROCESS_TIER_S:
            self._last_processes = guarded("processes", reader.processes, ())
            self._processes_at, self._process_reads = now, self._process_reads + 1
        processes = self._last_processes
        if self.gpu is None:
            gpu_system, gpus = GpuSystem(False, "GPU probing is off", source="none"), ()
        else:
            gpu_system, gpus = guarded(
                "gpu", lambda: self.gpu.read(processes),  # type: ignore[union-attr]
                (GpuSystem(False, "GPU probe failed"), ()),
            )
        if self.topology is None and self._topology_reader is not None:
            self.topology = guarded("topology", self._topology_reader, None)
            if self.topology is None:
                self._topology_reader = None  # failed once: say so once, do not retry every tick
        running = self.workload
        workload = guarded("workload", running.state, None) if running is not None else None
        focus = self.job_at_first_step
        if focus is not None and workload is not None and (any(r.step for r in workload.ranks) or
                                                            workload.status not in ALIVE):
            self.job_at_first_step, previous = None, self.job
            self.job = guarded("job", focus, None)
            if previous is not None and previous is not self.job:
                previous.close()
        focused = self.job
        topology = self.topology
        if nics and topology is not None:
            nics = guarded("nics", lambda: place_nics(nics, topology), nics)
        job = guarded("job", lambda: focused.read(gpus, workload, now), None) if focused is not None else None
        if job is not None and focused is not None and not self.simulated:  # --- NCCL RAS (issue 42) ---
            watch, read = self._nccl_ras(focused), job
            job = guarded("nccl-ras", lambda: watch.attach(read, now), read)
        snapshot = Snapshot(
            time=now, interval_s=interval, host=host, cpu=cpu, memory=memory, numa=numa, disks=disks,
            processes=processes, gpus=gpus, gpu_system=gpu_system, topology=self.topology, workload=workload,
            errors=tuple(errors), job=job, nics=nics,
        )
        self.history.push(snapshot)
        return snapshot

    def _nccl_ras(self, focused: JobReader) -> RasWatch:
        """The NCCL RAS watch of the focused job, new when the job is (issue 42)."""
        if self._ras is None or self._ras[0] is not focused:
            from hwtop.probes.nccl_ras.watch import RasWatch

            if self._ras is not None:
                self._ras[1].close()
            self._ras = (focused, RasWatch(self.nccl_ras_address, self.nccl_ras_interval_s))
        return self._ras[1]

    def refresh_topology(self, reader: Callable[[], Topology] | None = None) -> None:
        """Read the topology again at the next tick."""
        if reader is not None:
            self._topology_reader = reader
        self._topology_reader = self._topology_reader or self._initial_topology_reader
        self.topology = None

    def close(self) -> None:
        if self.workload is not None:
            self.workload.stop()
        if self.gpu is not None:
            self.gpu.close()
        if self.job is not None:
            self.job.close()  # a focused job's stack sampler: its py-spy children
        if self._ras is not None:  # NCCL RAS (issue 42): its query thread
            self._ras[1].close()
