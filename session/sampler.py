"""Composes the probes into one immutable Snapshot per tick.

`Sampler.sample()` is blocking (it reads /proc, /sys and NVML); the TUI calls it on a worker thread,
one tick at a time. A probe that raises lands in `Snapshot.errors` and the rest of the snapshot arrives.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from hwtop.model.history import History
from hwtop.model.snapshot import GpuSnapshot, GpuSystem, ProbeError, ProcessInfo, Snapshot, Topology
from hwtop.probes.cpu import CpuProbe
from hwtop.probes.disks import DiskProbe
from hwtop.probes.host import read_host
from hwtop.probes.memory import read_memory
from hwtop.probes.numa import NumaProbe, node_of_cpu
from hwtop.probes.processes import ProcessProbe

T = TypeVar("T")


class GpuProbeLike(Protocol):
    def read(self, processes: tuple[ProcessInfo, ...]) -> tuple[GpuSystem, tuple[GpuSnapshot, ...]]: ...

    def close(self) -> None: ...


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
    ) -> None:
        self.root = root
        self.numa = NumaProbe(root)
        self.cpu = CpuProbe()
        self.disks = DiskProbe(root)
        self.processes = ProcessProbe(root, limit=process_limit)
        self.gpu = gpu
        self.history = History(history_length)
        self._clock = clock
        self._topology_reader = topology_reader
        self._initial_topology_reader = topology_reader
        self.workload: Any = None  # a WorkloadMonitor (workload/monitor.py) once the user starts the job
        self.job: Any = None  # a JobProbe (probes/job.py) while a job is focused (--pid, --job, f)
        self.topology: Topology | None = None  # read once (first tick) and on refresh(), kept in every snapshot
        self._last_time: float | None = None
        self._last_processes: tuple[ProcessInfo, ...] = ()
        self._processes_at: float | None = None
        self._process_reads = 0
        self._lock = threading.Lock()  # ticks never overlap, even if two callers race

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
        host = guarded("host", lambda: read_host(self.root), None)
        memory = guarded("memory", read_memory, None)
        numa = guarded("numa", lambda: self.numa.read(memory.total_bytes if memory else None), None)
        cpu = guarded("cpu", lambda: self.cpu.read(node_of_cpu(numa)), None)
        disks = guarded("disks", self.disks.read, ())
        # The process list is the costliest probe and changes slowest: re-read at most every PROCESS_TIER_S
        # (the first two ticks always, so CPU % exists at once).
        if self._process_reads < 2 or self._processes_at is None or now - self._processes_at >= PROCESS_TIER_S:
            self._last_processes = guarded("processes", self.processes.read, ())
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
        workload = guarded("workload", self.workload.state, None) if self.workload is not None else None
        job = guarded("job", lambda: self.job.read(gpus, workload, now), None) if self.job is not None else None
        snapshot = Snapshot(
            time=now, interval_s=interval, host=host, cpu=cpu, memory=memory, numa=numa, disks=disks,
            processes=processes, gpus=gpus, gpu_system=gpu_system, topology=self.topology, workload=workload,
            errors=tuple(errors), job=job,
        )
        self.history.push(snapshot)
        return snapshot

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
        close = getattr(self.job, "close", None)
        if close is not None:
            close()  # a focused job's stack sampler: its py-spy children
