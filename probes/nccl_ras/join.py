"""NCCL's ranks joined with the job's own. RAS names a rank by the address its process was reached at and the pid
it has in its own pid namespace (getpid() inside its container), so a RAS rank is one of this host's job
processes only if its host is one of this node's addresses *and* its pid is that process's namespace pid (the
last NSpid of /proc/PID/status): pid alone would join nothing in a pod and join a remote rank whose pid happens
to equal a local one. A joined rank's row keeps its stacks and figures with NCCL's counts added; any other rank is
a row of its own, with the host and pid NCCL names and no stack figures (`nccl_only`).

Counts come from the communicator judged as the job's (NcclView.main: the one whose counts move); row numbers are
global ranks, read from the largest communicator (the world group, whose ranks are the job's), since a rank's
number in a tensor-parallel group is not its number in the job. An answer none of whose ranks on this node is a
job process is another job's (two jobs of one user on the default port): `foreign` says so and nothing is joined.

The join is made in two halves: the answer's (`answer_side`: every rank's counts, lag, state and row number, and the
rows of the ranks that are not this node's job processes), once an answer, and the tick's (`AnswerSide.join`: this
node's ranks' own figures, new each tick, with NCCL's beside them), so a tick of a 4,096-rank job costs its own
ranks and a sort, not the whole answer again."""

from __future__ import annotations

from dataclasses import dataclass, field

import msgspec.structs

from hwtop.model.job import RankFigures
from hwtop.model.ras import NcclComm, NcclView, RasComm, RasRank


@dataclass(frozen=True, slots=True)
class Here:
    """This node as RAS would name it: its addresses (as inet_ntop prints them) and, for each job process, the pid
    it has in its own namespace -> its pid here."""

    addresses: frozenset[str]
    pids: dict[int, int] = field(default_factory=dict)

    def pid(self, rank: RasRank) -> int | None:
        """The host pid of a RAS rank that is one of this node's job processes, else None."""
        if rank.pid is None or rank.host not in self.addresses:
            return None
        return self.pids.get(rank.pid)


def lag_of(rank: RasRank, most: dict[str, int]) -> int | None:
    if rank.missing:
        return None
    return sum(most[op] - value for op, value in rank.counts)


def foreign(view: NcclView, here: Here) -> str | None:
    """Why the answer is another job's, or None: some of its ranks are on this node, and none is a job process."""
    on_node = [r for nc in view.comms for r in nc.comm.ranks if r.host in here.addresses and r.pid is not None]
    if not on_node or not here.pids or any(here.pid(r) is not None for r in on_node):
        return None
    pids = sorted({r.pid for r in on_node if r.pid is not None})
    shown = ", ".join(map(str, pids[:4])) + (" ..." if len(pids) > 4 else "")
    return (f"the answer at {view.address} is another job's: its ranks on this node are pids {shown}, none of them "
            "this job's (give this job's NCCL_RAS_ADDR with --nccl-ras)")


def _global_ranks(view: NcclView) -> dict[tuple[str, int | None], int]:
    world = max((nc.comm for nc in view.comms), key=lambda c: c.size, default=None)
    return {} if world is None else {(r.host, r.pid): r.rank for r in world.ranks if r.pid is not None}


@dataclass(frozen=True, slots=True)
class _Mine:
    """A RAS rank that is one of this node's job processes (`pid`: its pid here), with what NCCL says of it."""

    pid: int
    number: int
    host: str
    gpu: int | None
    collectives: tuple[tuple[str, int], ...]
    lag: int | None
    state: str | None


@dataclass(frozen=True, slots=True)
class AnswerSide:
    """The answer's half of the join: `others`, the rows of the ranks that are not this node's job processes (by row
    number, the first of a number kept), and `mine`, NCCL's figures of those that are, in the answer's order."""

    others: dict[int, RankFigures]
    mine: tuple[_Mine, ...]

    def join(self, ranks: tuple[RankFigures, ...]) -> tuple[RankFigures, ...]:
        """The job's ranks (this tick's figures) with NCCL's beside them, and every other rank NCCL names, by row."""
        by_pid = {r.pid: r for r in ranks if r.pid is not None}
        out = dict(self.others)
        used: set[int] = set()
        for m in self.mine:
            own = by_pid.get(m.pid)
            if own is not None:
                out[own.rank] = msgspec.structs.replace(own, gpu=own.gpu if own.gpu is not None else m.gpu,
                                                        collectives=m.collectives, lag=m.lag, nccl_state=m.state)
                used.add(id(own))
            else:
                out[m.number] = RankFigures(m.number, ranks[0].host if ranks else m.host, m.pid, gpu=m.gpu,
                                            collectives=m.collectives, lag=m.lag, nccl_state=m.state)
        for r in ranks:
            if id(r) not in used:
                out.setdefault(r.rank, r)
        return tuple(out[k] for k in sorted(out))


def answer_side(view: NcclView, here: Here) -> AnswerSide | None:
    """The answer's half of the join, or None where nothing is joined (no communicator judged, another job's)."""
    main = view.main
    if main is None or view.foreign:
        return None
    comm: RasComm = main.comm
    most = comm.maxima()
    numbers = _global_ranks(view)
    others: dict[int, RankFigures] = {}
    mine: list[_Mine] = []
    for rr in comm.ranks:
        number = numbers.get((rr.host, rr.pid), rr.rank)
        pid = here.pid(rr)
        if pid is not None:
            mine.append(_Mine(pid, number, rr.host, rr.nvml_dev, rr.counts, lag_of(rr, most), rr.state))
        elif number not in others:
            others[number] = RankFigures(number, rr.host, rr.pid, gpu=rr.nvml_dev, nccl_only=True,
                                         collectives=rr.counts, lag=lag_of(rr, most), nccl_state=rr.state)
    return AnswerSide(others, tuple(mine))


def join_ranks(ranks: tuple[RankFigures, ...], view: NcclView, here: Here) -> tuple[RankFigures, ...]:
    side = answer_side(view, here)
    return ranks if side is None else side.join(ranks)


def named(view: NcclView, addresses: frozenset[str], hostname: str) -> NcclView:
    """The view with this node's hostname beside the address RAS reached it at (RasRank.name), on every rank at
    one of this node's addresses (Here.addresses): a host has one name on every screen (the job view's, the
    header's), NCCL's address beside it where NCCL's words give one."""
    if not hostname or not any(r.host in addresses for nc in view.comms for r in nc.comm.ranks):
        return view

    def of(comm: RasComm) -> RasComm:
        return msgspec.structs.replace(comm, ranks=tuple(msgspec.structs.replace(r, name=hostname)
                                                         if r.host in addresses else r for r in comm.ranks))

    comms: tuple[NcclComm, ...] = tuple(msgspec.structs.replace(nc, comm=of(nc.comm)) for nc in view.comms)
    return msgspec.structs.replace(view, comms=comms)
