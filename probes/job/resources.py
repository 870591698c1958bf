"""The job's share of the machine: usable cores (affinity and CPU quota), pressure stalls, its memory cgroup,
swap-ins, and the disks its open files lived on."""

from __future__ import annotations

from collections.abc import Callable

from hwtop.model.job import JobProcess
from hwtop.probes.cgroup import Cgroups, cgroups_of, cpu_quota_cores, memory_of
from hwtop.probes.job.parts import JobParts, JobTick
from hwtop.probes.procfiles import read_bytes
from hwtop.probes.psi import PressureProbe

DEVICE_MEMORY_S = 120.0  # a disk a short-lived worker read from stays listed this long


class DatasetDisks:
    """The disks the job's open files were seen on (the figures see them), remembered DEVICE_MEMORY_S."""

    __slots__ = ("_devices",)

    def __init__(self) -> None:
        self._devices: dict[str, tuple[int, float]] = {}  # disk → (files, last seen)

    def seen(self, devices: dict[str, int], mono: float) -> None:
        for device, files in devices.items():
            self._devices[device] = (files, mono)

    def recent(self, mono: float) -> tuple[tuple[str, int], ...]:
        self._devices = {d: v for d, v in self._devices.items() if mono - v[1] < DEVICE_MEMORY_S}
        return tuple(sorted(((d, files) for d, (files, _) in self._devices.items()), key=lambda kv: -kv[1]))


class JobResources:
    """What the job's cgroup, /proc/pressure and /proc/vmstat say, and the disks its open files lived on."""

    __slots__ = ("_cgroups", "_pressure", "_pswpin", "disks", "proc", "root")

    def __init__(self, root: str, proc: str, clock: Callable[[], float], disks: DatasetDisks) -> None:
        self.root = root
        self.proc = proc
        self.disks = disks
        self._pressure = PressureProbe(root, clock)
        self._cgroups: Cgroups | None = None  # the first root's, found once
        self._pswpin: tuple[float, int] | None = None

    def read(self, tick: JobTick, parts: JobParts) -> None:
        parts.usable_cores = self._usable_cores(tick.alive, tick.roots)
        groups = self._groups(tick.roots)
        parts.pressure = self._pressure.read(groups.unified if groups is not None else None)
        parts.cgroup_memory = memory_of(self._cgroups, self.root) if self._cgroups is not None else None
        parts.dataset_devices = self.disks.recent(tick.mono)
        parts.swap_in_pages_per_s = self._swap_in(tick.mono)

    def close(self) -> None:
        """Nothing to let go of: each file is opened and closed within a read."""

    def _groups(self, roots: list[int]) -> Cgroups | None:
        if self._cgroups is None and roots:
            self._cgroups = cgroups_of(roots[0], self.root)
        return self._cgroups

    def _swap_in(self, mono: float) -> float | None:
        try:
            text = read_bytes(f"{self.proc}/vmstat").decode("ascii", "replace")
            total = int(next(line.split()[1] for line in text.splitlines() if line.startswith("pswpin ")))
        except (OSError, StopIteration, ValueError, IndexError):
            return None
        before, self._pswpin = self._pswpin, (mono, total)
        if before is None or mono <= before[0]:
            return None
        return round(max(0, total - before[1]) / (mono - before[0]), 1)

    def _usable_cores(self, alive: list[JobProcess], roots: list[int]) -> int | None:
        allowed: set[int] = set()
        for p in alive:
            allowed.update(p.cpu_affinity or ())
        if not allowed:
            return None
        cores = len(allowed)
        groups = self._groups(roots)
        quota = cpu_quota_cores(groups) if groups is not None else None
        if quota is not None:
            cores = min(cores, max(1, int(quota + 0.5)))
        return cores
