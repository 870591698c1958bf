"""DataLoader workers born and exited in the last minute, per parent, and how many each parent runs at once."""

from __future__ import annotations

from collections import deque

from hwtop.model.job import JobProcess, WorkerBirths
from hwtop.probes.job.parts import JobParts, JobTick
from hwtop.probes.job.state import WORKER

MINUTE_S = 60.0


class WorkerCounts:
    """The workers' births and exits, in rings bounded to the last minute."""

    __slots__ = ("_alive_per_parent", "_births", "_exits", "_parent_since")

    def __init__(self) -> None:
        self._births: deque[tuple[float, int]] = deque()  # (when, parent)
        self._exits: deque[float] = deque()
        self._alive_per_parent: deque[tuple[float, dict[int, int]]] = deque()
        self._parent_since: dict[int, float] = {}  # pid → when first seen, of every live process but workers

    def read(self, tick: JobTick, parts: JobParts) -> None:
        mono = tick.mono
        if tick.number > 1:  # after the first tick: those already running were not born while watched
            self._births.extend((mono, parent) for parent in _born(tick.processes, tick.last))
        self._alive_per_parent.append((mono, _alive_per_parent(tick.processes)))
        for p in tick.processes:
            if p.role != WORKER and p.state != "Z":
                self._parent_since.setdefault(p.pid, mono)
        for ring in (self._births, self._alive_per_parent):
            while ring and ring[0][0] < mono - MINUTE_S:
                ring.popleft()
        while self._exits and self._exits[0] < mono - MINUTE_S:
            self._exits.popleft()
        live = {p.pid for p in tick.processes}
        self._parent_since = {pid: t for pid, t in self._parent_since.items() if pid in live}
        self._exits.extend(mono for pid, last in tick.last.items()
                           if pid not in live and last.role == WORKER and last.alive)  # gone since the last tick
        parts.workers_started_last_minute = len(self._births)
        parts.workers_exited_last_minute = len(self._exits)
        parts.worker_births = self._worker_births(mono)

    def close(self) -> None:
        """Nothing held but counts."""

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


def _born(processes: list[JobProcess], last: dict[int, JobProcess]) -> list[int]:
    """The parents of the workers that are workers now and were not last tick (a worker names itself a moment
    after it starts: born when first seen as one)."""
    out = []
    for p in processes:
        before = last.get(p.pid)
        if p.role == WORKER and p.ppid is not None and (before is None or before.role != WORKER):
            out.append(p.ppid)
    return out


def _alive_per_parent(processes: list[JobProcess]) -> dict[int, int]:
    alive: dict[int, int] = {}
    for p in processes:
        if p.role == WORKER and p.state != "Z" and p.ppid is not None:
            alive[p.ppid] = alive.get(p.ppid, 0) + 1
    return alive
