"""DataLoader workers born and exited in the last minute, per parent, and how many each parent runs at once."""

from __future__ import annotations

from hwtop.model.job import JobProcess, WorkerBirths
from hwtop.probes.job.state import WORKER, JobState

MINUTE_S = 60.0


class WorkerCounts(JobState):
    """The workers' births and exits, in rings bounded to the last minute."""

    __slots__ = ()

    def _count_workers(self, processes: list[JobProcess], mono: float) -> None:
        """Births of DataLoader workers per parent (after the first tick: those already running were not
        born while watched), and how many each parent runs at once."""
        if self._ticks > 1:  # a worker names itself a moment after it starts: born when first seen as one
            for p in processes:
                before = self._last.get(p.pid)
                if p.role == WORKER and p.ppid is not None and (before is None or before.role != WORKER):
                    self._births.append((mono, p.ppid))
        alive: dict[int, int] = {}
        for p in processes:
            if p.role == WORKER and p.state != "Z" and p.ppid is not None:
                alive[p.ppid] = alive.get(p.ppid, 0) + 1
        for p in processes:
            if p.role != WORKER and p.state != "Z":
                self._parent_since.setdefault(p.pid, mono)
        self._alive_per_parent.append((mono, alive))
        for ring in (self._births, self._alive_per_parent):
            while ring and ring[0][0] < mono - MINUTE_S:
                ring.popleft()
        while self._exits and self._exits[0] < mono - MINUTE_S:
            self._exits.popleft()
        live = {p.pid for p in processes}
        self._parent_since = {pid: t for pid, t in self._parent_since.items() if pid in live}

    def _worker_births(self, mono: float) -> tuple[WorkerBirths, ...]:
        born: dict[int, int] = {}
        for _, parent in self._births:
            born[parent] = born.get(parent, 0) + 1
        out = []
        for parent, count in sorted(born.items()):
            peak = max((alive.get(parent, 0) for _, alive in self._alive_per_parent), default=0)
            span = min(MINUTE_S, mono - self._parent_since.get(parent, mono))
            out.append(WorkerBirths(parent, count, round(span, 1), peak))
        return tuple(out)
