"""What NCCL's RAS answers say about a job's ranks (model/ras.py NcclView), judged as NCCL's ras.rst tells:
counts unequal and unchanged across queries are a hung rank, equal and unchanged a job that launches nothing,
a rank routinely behind is a straggler, a missing rank an unresponsive or dead process, and non-zero error
fields are NCCL's own errors. Pure functions of the view, so the one-node rules and the fleet (the same view
rebuilt from Prometheus) name the same rank for the same answers.

A count is of collectives *launched* (enqueued by the host), not completed: a collective hung on the GPU leaves
every count equal (nccl#1730: RAS fine while PyTorch's watchdog timed out), and point-to-point, AlltoAll and
CUDA-graph-captured collectives are not counted at all. Rank numbers are within each communicator."""

from __future__ import annotations

from dataclasses import dataclass

from hwtop.advice.thresholds import Thresholds
from hwtop.model.ras import IN_PROGRESS, NcclComm, NcclView, RasComm, RasEvent, RasRank, result_name


def who(rank: RasRank) -> str:
    """`rank 5 (pid 4055 on 10.0.0.3, GPU 1)`: as a user finds it on a cluster; a rank of this node by the name
    the rest of hwtop gives it, with the address NCCL gives (`on dgx-a100-demo at 10.0.0.1`)."""
    host = f"{rank.name} at {rank.host}" if rank.name else rank.host
    parts = [f"pid {rank.pid} on {host}" if rank.pid is not None else f"on {host}"]
    if rank.nvml_dev is not None:
        parts.append(f"GPU {rank.nvml_dev}")
    return f"rank {rank.rank} ({', '.join(parts)})"


def _ranks(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _ordered(view: NcclView) -> list[NcclComm]:
    """The judged communicator first; none at all from another job's answer (it says nothing of this job)."""
    if view.foreign:
        return []
    main = view.main
    return ([main] if main else []) + [c for c in view.comms if c is not main]


@dataclass(frozen=True, slots=True)
class Hang:
    comm: NcclComm
    behind: tuple[RasRank, ...]
    op: str
    most: int
    waiting: int  # ranks at `most`
    still_s: float
    unnamed: int = 0  # more ranks behind that NCCL's text counts without naming (past 10 ranks)

    @property
    def sentence(self) -> str:
        names = [who(r) for r in self.behind[:3]] + ([f"{len(self.behind) - 3} more"] if len(self.behind) > 3
                                                       else [])
        if self.unnamed:
            names.append(f"{self.unnamed} rank{'s' if self.unnamed != 1 else ''} NCCL's text counts without naming")
        verb = "has" if len(self.behind) + self.unnamed == 1 else "have"
        others = "the other rank waits" if self.waiting == 1 else f"the other {self.waiting} ranks wait"
        return f"{_ranks(names)} {verb} not launched {self.op} #{self.most}, which {others} in"


def _count(rank: RasRank, op: str, default: int) -> int:
    value = rank.count(op)
    return default if value is None else value


def hang(view: NcclView, t: Thresholds) -> Hang | None:
    """Counts unequal and unchanged across queries spanning at least ras_hang_s."""
    for nc in _ordered(view):
        comm = nc.comm
        still = nc.queried_at - nc.same_since
        if still < t["ras_hang_s"]:
            continue
        present = [r for r in comm.ranks if not r.missing]
        for op, most in comm.maxima().items():
            behind = tuple(r for r in present if _count(r, op, most) < most)
            if behind:
                return Hang(nc, behind, op, most, _waiting(comm, present, op, most), still,
                            comm.unnamed_behind(op, most))
    return None


def _waiting(comm: RasComm, present: list[RasRank], op: str, most: int) -> int:
    """Ranks that have launched `most`: named ones, and those the text format counts (its groups) or leaves out
    (the ranks that agree, when no group is printed)."""
    groups = [g for g in comm.groups if g.op == op]
    if groups:
        return sum(g.ranks for g in groups if g.value == most)
    return sum(1 for r in present if r.count(op) == most) + (
        comm.size - len(comm.ranks) if dict(comm.rest_counts).get(op) == most else 0)


def stopped(view: NcclView, t: Thresholds) -> tuple[NcclComm, float] | None:
    """Every rank of the job's communicator has launched as many collectives as the others, and none for
    ras_stopped_s: a checkpoint, an eval, or every rank stuck before a collective."""
    nc = view.main if not view.foreign else None
    if nc is None or any(r.missing for r in nc.comm.ranks) or nc.queries < 2 or not nc.comm.maxima():
        return None  # (the text format gives no counts of a communicator whose ranks agree)
    still = nc.queried_at - nc.same_since
    return (nc, still) if still >= t["ras_stopped_s"] else None


def missing(view: NcclView) -> list[tuple[NcclComm, RasRank, float | None]]:
    """Ranks RAS could not reach (unresponsive) or has given up on (dead), each once (the largest communicator
    that lists it), with the time it was first found missing."""
    out, seen = [], set()
    for nc in _ordered(view):
        for r in nc.comm.ranks:
            key = (r.host, r.pid, r.nvml_dev)
            if r.missing and key not in seen and (r.unresponsive or r.dead):
                seen.add(key)
                out.append((nc, r, nc.missing_from(r.rank)))
    return out


@dataclass(frozen=True, slots=True)
class Straggler:
    comm: NcclComm
    rank: RasRank
    behind: int
    window: int
    others_most: int  # the most queries any other rank was behind in


def straggler(view: NcclView, t: Thresholds) -> Straggler | None:
    """The rank found behind in most of the recent queries while every other rank rarely is."""
    nc = view.main if not view.foreign else None
    if nc is None or nc.window < t["ras_straggler_min_queries"] or not nc.behind:
        return None
    if nc.same_since < nc.queried_at:  # nothing launched since the previous answer: stuck, not late
        return None
    ordered = sorted(nc.behind, key=lambda kv: -kv[1])
    rank, count = ordered[0]
    others = ordered[1][1] if len(ordered) > 1 else 0
    if count < t["ras_straggler_share"] * nc.window or others > t["ras_straggler_others_share"] * nc.window:
        return None
    found = next((r for r in nc.comm.ranks if r.rank == rank and not r.missing), None)
    return Straggler(nc, found, count, nc.window, others) if found is not None else None


def errors(view: NcclView) -> list[tuple[RasRank, str]]:
    """Ranks with NCCL errors: an initialisation error, an asynchronous error (what ncclCommGetAsyncError would
    return), or the abort flag, by NCCL's names."""
    out = []
    for nc in _ordered(view):
        for r in nc.comm.ranks:
            if r.missing:
                continue
            what = []
            if r.init_state not in (0, IN_PROGRESS):
                what.append(f"initialisation failed: {result_name(r.init_state)}")
            if r.async_error not in (0, IN_PROGRESS):
                what.append(f"asynchronous error {result_name(r.async_error)}")
            if r.abort_flag:
                what.append("its communicator was aborted (abort_flag)")
            if what:
                out.append((r, "; ".join(what)))
    return out


def dead_peers(view: NcclView) -> list[RasEvent]:
    """Processes MONITOR said were declared dead (PEER_DEAD, NCCL >= 2.29) and have not joined again since: known
    at once, before any STATUS, at no gathering cost."""
    last: dict[tuple[str, int | None], RasEvent] = {}
    for event in view.events:
        last[(event.host, event.pid)] = event
    return [e for e in last.values() if e.event == "PEER_DEAD"]
