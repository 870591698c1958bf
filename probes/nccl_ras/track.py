"""What changes between RAS queries, per communicator: since when its counts have not moved, which ranks were
behind in each of the recent queries, since when a rank has been missing. ras.rst: "a one-operation mismatch is
normal while a job runs ... if the output does not change across subsequent RAS queries, it may indicate that
the communicator is stuck", and "certain ranks routinely arriving to the collective operations later than
others" is imbalance; both need more than one answer. Bounded: WINDOW queries per communicator, MAX_COMMS
communicators (the largest kept).

Communicators are told apart by (hash, secondary hash): the hash alone is not unique (ras_internal.h). One absent
from an answer (a gathering that timed out on a leg, a process slow to answer) keeps its windows for KEEP_ANSWERS
answers, so it does not come back as new. The communicator judged as the job's (`main`) is the one whose counts
move with the job: where the job's steps are known, the one that moved in the same intervals as the steps; else
the one that moved in most of the recent intervals; ties and a job where nothing moves keep the previous choice,
so a hang is judged on the communicator that was busy before it (not an idle world group of a tensor- or
pipeline-parallel job, whose counts stand still from its first barrier on)."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from hwtop.model.ras import NcclComm, RasComm, RasReply

WINDOW = 12  # queries a straggler is judged over (two minutes at the default interval)
MAX_COMMS = 64
KEEP_ANSWERS = 3  # answers a communicator may be absent from and keep its windows

Key = tuple[str, str]


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
    absent: int = 0  # answers in a row it was not in
    moved: deque[bool] = field(default_factory=lambda: deque(maxlen=WINDOW))  # counts changed since the answer before
    with_steps: deque[bool] = field(default_factory=lambda: deque(maxlen=WINDOW))  # ... as the steps did or did not


@dataclass(slots=True)
class Tracker:
    _comms: dict[Key, _Comm] = field(default_factory=dict)
    main: Key | None = None  # the communicator judged as the job's

    def update(self, reply: RasReply, at: float, stepped: bool | None = None) -> tuple[NcclComm, ...]:
        """Fold one answer in; the communicators it names, as they stand now. `stepped`: whether the job's steps
        advanced since the previous answer, where known."""
        out: list[NcclComm] = []
        keep = sorted(reply.comms, key=lambda c: -c.size)[:MAX_COMMS]
        for comm in keep:
            state = self._comms.get(comm.key) or _Comm()
            key = counts_key(comm)
            if state.queries:
                state.moved.append(key != state.key)
                if stepped is not None:
                    state.with_steps.append((key != state.key) == stepped)
            if state.queries == 0 or key != state.key:
                state.key, state.same_since = key, at
            state.queries += 1
            state.absent = 0
            state.behind.append(behind_ranks(comm))
            missing = {r.rank for r in comm.ranks if r.missing}
            state.missing_since = {rank: state.missing_since.get(rank, at) for rank in missing}
            tally: dict[int, int] = {}
            for ranks in state.behind:
                for rank in ranks:
                    tally[rank] = tally.get(rank, 0) + 1
            state.latest = NcclComm(comm, state.same_since, at, state.queries, len(state.behind),
                                    tuple(sorted(tally.items())), tuple(sorted(state.missing_since.items())))
            self._comms[comm.key] = state
            out.append(state.latest)
        named = {c.key for c in keep}
        for key, state in list(self._comms.items()):
            if key not in named:
                state.absent += 1
                if state.absent > KEEP_ANSWERS or len(self._comms) > MAX_COMMS:
                    del self._comms[key]
        self.main = self._judge(keep)
        return tuple(out)

    def _judge(self, comms: list[RasComm]) -> Key | None:
        def score(comm: RasComm) -> tuple[int, int, bool, int]:
            state = self._comms[comm.key]
            return (sum(state.with_steps), sum(state.moved), comm.key == self.main, comm.size)

        if not comms:
            return self.main
        best = max(comms, key=score)
        top = score(best)
        if top[0] == 0 and top[1] == 0 and self.main in self._comms:
            return self.main  # nothing moves (yet, or any more): keep the communicator judged before
        return best.key
