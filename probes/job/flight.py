"""Each rank's Flight Recorder joined to its RankFigures (`flight`): the recorder's settings from the rank's
environment (the table's, read once per process) and its latest dump, read by the FlightRecorderReader
(probes/flight_recorder/reader.py), which keeps what it read per process and per dump file (a file is read again
only when its stat changes). A look stats each rank's dump path, one to four of them (torch's default prefixes,
where the rank sets none), so it is taken every READ_EVERY_S, and at once for a rank not looked at before; a rank
that ended keeps its last reading (its own files are no longer reachable through /proc)."""

from __future__ import annotations

import msgspec.structs

from hwtop.model.flight import FlightRank
from hwtop.probes.flight_recorder.reader import FlightRecorderReader, RankProcess
from hwtop.probes.job.parts import JobParts, JobTick

READ_EVERY_S = 5.0  # a dump is written on a watchdog timeout or when asked: rarely


class JobFlight:
    """Sets `flight` on the ranks of the job on this host that the ranks reader found (after it in JobProbe's parts)."""

    __slots__ = ("_looked_at", "_seen", "every", "reader")

    def __init__(self, proc: str = "/proc", every: float = READ_EVERY_S) -> None:
        self.reader = FlightRecorderReader(proc)
        self.every = every
        self._looked_at: float | None = None
        self._seen: dict[int, FlightRank] = {}  # pid -> its last reading

    def read(self, tick: JobTick, parts: JobParts) -> None:
        alive = {p.pid for p in tick.alive}
        live = [RankProcess(r.pid, r.rank, tick.environ[r.pid]) for r in parts.ranks
                if r.pid is not None and not r.nccl_only and r.pid in alive and r.pid in tick.environ]
        if self._looked_at is None or tick.mono - self._looked_at >= self.every or \
                any(r.pid not in self._seen for r in live):
            self._looked_at = tick.mono
            self._seen.update(self.reader.read(live))
        kept = {r.pid for r in parts.ranks}
        self._seen = {pid: flight for pid, flight in self._seen.items() if pid in kept}
        if self._seen:
            parts.ranks = tuple(msgspec.structs.replace(r, flight=self._seen[r.pid])
                                if r.pid is not None and r.pid in self._seen else r for r in parts.ranks)

    def close(self) -> None:
        self._seen.clear()
