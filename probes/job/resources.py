"""The job's share of the machine: usable cores (affinity and CPU quota), pressure stalls, swap-ins, dataset disks."""

from __future__ import annotations

from hwtop.model.job import JobProcess, Pressure
from hwtop.probes.cgroup import cgroups_of, cpu_quota_cores
from hwtop.probes.job.state import JobState
from hwtop.probes.procfiles import read_bytes

DEVICE_MEMORY_S = 120.0  # a disk a short-lived worker read from stays listed this long


class JobResources(JobState):
    """What the job's cgroup, /proc/pressure and /proc/vmstat say, and the disks its open files lived on."""

    __slots__ = ()

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
        if self._cgroups is None and roots:
            self._cgroups = cgroups_of(roots[0], self.root)
        quota = cpu_quota_cores(self._cgroups) if self._cgroups is not None else None
        if quota is not None:
            cores = min(cores, max(1, int(quota + 0.5)))
        return cores

    def _read_pressure(self, roots: list[int]) -> Pressure | None:
        if self._cgroups is None and roots:
            self._cgroups = cgroups_of(roots[0], self.root)
        assert self._pressure is not None
        return self._pressure.read(self._cgroups.unified if self._cgroups is not None else None)

    def _dataset_devices(self, mono: float) -> tuple[tuple[str, int], ...]:
        self._devices = {d: v for d, v in self._devices.items() if mono - v[1] < DEVICE_MEMORY_S}
        return tuple(sorted(((d, files) for d, (files, _) in self._devices.items()), key=lambda kv: -kv[1]))
