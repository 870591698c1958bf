"""NCCL's ranks joined with the job's own: a rank whose pid is one of this host's job processes is that rank's
row (its stacks, its figures) with NCCL's counts added; any other is a row of its own, with the host and pid NCCL
names and no stack figures (`nccl_only`). Rank numbers are the largest communicator's: the job's world."""

from __future__ import annotations

import msgspec.structs

from hwtop.model.job import RankFigures
from hwtop.model.ras import NcclComm, NcclView, RasComm, RasRank


def lag_of(rank: RasRank, most: dict[str, int]) -> int | None:
    if rank.missing:
        return None
    return sum(most[op] - value for op, value in rank.counts)


def join_ranks(ranks: tuple[RankFigures, ...], view: NcclView, local_pids: set[int]) -> tuple[RankFigures, ...]:
    main = view.main
    if main is None:
        return ranks
    comm: RasComm = main.comm
    most = comm.maxima()
    by_pid = {r.pid: r for r in ranks if r.pid is not None}
    out: dict[int, RankFigures] = {}
    used: set[int] = set()
    for rr in comm.ranks:
        nccl = {"collectives": rr.counts, "lag": lag_of(rr, most), "nccl_state": rr.state}
        own = by_pid.get(rr.pid) if rr.pid is not None else None
        if own is not None:
            out[own.rank] = msgspec.structs.replace(own, gpu=own.gpu if own.gpu is not None else rr.nvml_dev, **nccl)
            used.add(id(own))
        elif rr.pid is not None and rr.pid in local_pids:
            out[rr.rank] = RankFigures(rr.rank, ranks[0].host if ranks else rr.host, rr.pid, gpu=rr.nvml_dev, **nccl)
        else:
            out.setdefault(rr.rank, RankFigures(rr.rank, rr.host, rr.pid, gpu=rr.nvml_dev, nccl_only=True, **nccl))
    for r in ranks:
        if id(r) not in used:
            out.setdefault(r.rank, r)
    return tuple(out[k] for k in sorted(out))


def named(view: NcclView, local_pids: set[int], hostname: str) -> NcclView:
    """The view with this node's hostname beside the address RAS reached it at (RasRank.name), on every rank of
    that address: a host has one name on every screen (the job view's, the header's), NCCL's address beside it
    where NCCL's words give one. The address is this node's where a rank at it is one of this host's job
    processes."""
    here = {r.host for nc in view.comms for r in nc.comm.ranks if r.pid is not None and r.pid in local_pids}
    if not here or not hostname:
        return view

    def of(comm: RasComm) -> RasComm:
        return msgspec.structs.replace(comm, ranks=tuple(msgspec.structs.replace(r, name=hostname)
                                                         if r.host in here else r for r in comm.ranks))

    comms: tuple[NcclComm, ...] = tuple(msgspec.structs.replace(nc, comm=of(nc.comm)) for nc in view.comms)
    return msgspec.structs.replace(view, comms=comms)
