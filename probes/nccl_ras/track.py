"""What changes between RAS queries, per communicator: since when its counts have not moved, which ranks were
behind in each of the recent queries, since when a rank has been missing. ras.rst: "a one-operation mismatch is
normal while a job runs ... if the output does not change across subsequent RAS queries, it may indicate that
the communicator is stuck", and "certain ranks routinely arriving to the collective operations later than
others" is imbalance; both need more than one answer. Bounded: WINDOW queries per communicator, MAX_COMMS
communicators (the largest kept)."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from hwtop.model.ras import NcclComm, RasComm, RasReply

WINDOW = 12  # queries a straggler is judged over (two minutes at the default interval)
MAX_COMMS = 64


def counts_key(comm: RasComm) -> tuple[tuple[int, tuple[tuple[str, int], ...]], ...]:
    return tuple((r.rank, r.counts) for r in comm.ranks if not r.missing) + (((-1, comm.rest_counts),)
                                                                           if comm.rest_counts else ())


def behind_ranks(comm: RasComm) -> frozenset[int]:
    """Ranks that have launched fewer collectives of some kind than the most advanced rank."""
    most = comm.maxima()
    return frozenset(r.rank for r in comm.ranks if not r.missing and
                     any(value < most[op] for op, value in r.counts))


@dataclass(slots=True)
class _Comm:
    key: tuple[tuple[int, tuple[tuple[str, int], ...]], ...] = ()
    same_since: float = 0.0
    queries: int = 0
    behind: deque[frozenset[int]] = field(default_factory=lambda: deque(maxlen=WINDOW))
    missing_since: dict[int, float] = field(default_factory=dict)
    latest: NcclComm | None = None


@dataclass(slots=True)
class Tracker:
    _comms: dict[str, _Comm] = field(default_factory=dict)

    def update(self, reply: RasReply, at: float) -> tuple[NcclComm, ...]:
        """Fold one answer in; the communicators it names, as they stand now (those gone from it are dropped)."""
        out: list[NcclComm] = []
        keep = sorted(reply.comms, key=lambda c: -c.size)[:MAX_COMMS]
        for comm in keep:
            state = self._comms.get(comm.hash) or _Comm()
            key = counts_key(comm)
            if state.queries == 0 or key != state.key:
                state.key, state.same_since = key, at
            state.queries += 1
            state.behind.append(behind_ranks(comm))
            missing = {r.rank for r in comm.ranks if r.missing}
            state.missing_since = {rank: state.missing_since.get(rank, at) for rank in missing}
            tally: dict[int, int] = {}
            for ranks in state.behind:
                for rank in ranks:
                    tally[rank] = tally.get(rank, 0) + 1
            state.latest = NcclComm(comm, state.same_since, at, state.queries, len(state.behind),
                                    tuple(sorted(tally.items())), tuple(sorted(state.missing_since.items())))
            self._comms[comm.hash] = state
            out.append(state.latest)
        self._comms = {c.hash: self._comms[c.hash] for c in keep}
        return tuple(out)
