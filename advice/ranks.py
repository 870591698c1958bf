"""One verdict per rank of a job, from every signal, by one pure function (`judge`): doctor, the job view, the
exporter and the fleet (the same figures rebuilt from Prometheus for every host) all call it, so they say the same
state, in the same words, of the same rank.

A rank is running, slow (the others wait for it: with its cause), stuck before a collective (it never launched
the one its peers launched: where in its code it is), stuck inside one (launched and never finished: which, since
when), dead or unresponsive, or unknown. The signals: the ranks' stacks (their collective-wait shares: DDP's
all-reduce waits for the slowest rank; a stack that stopped), NCCL's RAS launch counts, PyTorch's Flight Recorder
(who launched and who completed which collective), steps, the GPUs' faults. A still stack is evidence, not a
verdict: any progress between two looks (steps, NCCL counts, the recorder's completed collectives) outweighs every
claim that a rank is stuck, and its own motion (its main thread on a CPU, its stack changing) outweighs a still
stack; a verdict names the signals that agree and those that disagree."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple

from hwtop.advice.last_answer import LastAnswer
from hwtop.advice.rank_flight import FlightClaim, flight_claims
from hwtop.advice.rank_signals import (
    Progress,
    StackCall,
    launched,
    newest_seen,
    pct,
    progress,
    stack_call,
    stillness,
    who,
)
from hwtop.advice.thresholds import Thresholds
from hwtop.advice.timeline import clock
from hwtop.model.job import RankFigures
from hwtop.model.verdict import STATES, GpuFault, RankState, Verdict, Verdicts

DEAD_STATES = ("DEAD", "UNRESPONSIVE")


class Look(NamedTuple):
    """The ranks' figures at one moment (`at`, wall clock): now, and the same ranks a window earlier."""

    ranks: Sequence[RankFigures]
    at: float | None = None


Faults = Mapping[tuple[str, int], Sequence[GpuFault]]  # (host, GPU index) -> its faults


class _Case(NamedTuple):
    """What the whole job's signals say, once, for every rank's verdict."""

    flight: dict[tuple[str, int], FlightClaim]
    stacks: StackCall | None
    ras: dict[tuple[str, int], tuple[str, str, tuple[int, ...]]]  # (host, rank) -> (kind, words, held by)
    span_s: float | None
    t: Thresholds
    lately: Mapping[tuple[str, int], RankFigures]  # the ranks at the recent look (stuck_stack_s back)


def _span(now: Look, before: Look | None) -> float | None:
    return now.at - before.at if before is not None and now.at is not None and before.at is not None else None


def judge(now: Look, before: Look | None, t: Thresholds, faults: Faults | None = None,
          recent: Look | None = None) -> Verdicts:
    """`before`: the ranks a look earlier (ras_hang_s); `recent`: the ranks stuck_stack_s earlier, where steps that
    stopped since show that the progress between the looks came before the stop."""
    ranks = sorted(now.ranks, key=lambda r: (r.rank, r.host))
    if not ranks:
        return Verdicts((), "no rank figures (py-spy missing or ptrace refused?)")
    earlier = {(r.host, r.rank): r for r in before.ranks} if before is not None else {}
    span = _span(now, before)
    recent_span = _span(now, recent)
    lately = {(r.host, r.rank): r for r in recent.ranks} \
        if recent is not None and recent_span is not None and recent_span >= t["stuck_stack_s"] else {}
    case = _Case(flight_claims(ranks, t["rank_hang_s"]), stack_call(ranks, t), _ras_claims(ranks, earlier, span, t),
                 span, t, lately)
    verdicts = tuple(_with_faults(_verdict(r, earlier.get((r.host, r.rank)), case),
                                  (faults or {}).get((r.host, r.gpu), ()) if r.gpu is not None else ())
                     for r in ranks)
    message = None if any(v.state != "unknown" for v in verdicts) else missing_figure(ranks, t)
    return Verdicts(verdicts, message)


def _verdict(rank: RankFigures, before: RankFigures | None, case: _Case) -> Verdict:
    moved = _since_stop(rank, progress(rank, before, case.t), case)
    dead = _dead(rank, case)
    if dead is not None:
        return dead
    stuck = _stuck(rank, case, moved)
    if stuck is not None and stuck.by == "still-stack" and before is None and _counted(rank):
        return _record(rank, "unknown", "cannot be judged yet: its stack has not moved, and whether its "
                       "collectives or steps advance shows at the next look", agree=stuck.agree, by="still-stack")
    if stuck is not None and not moved.job:  # progress between the looks outweighs every claim of a stop
        # a rank that never launched may well be busy elsewhere; one inside a collective should not move
        against = moved.motion if stuck.state == "inside-collective" else ()
        return _record(rank, stuck.state, stuck.words, agree=stuck.agree, disagree=against,
                       blamed=stuck.blamed, collective=stuck.collective, since=stuck.since, site=stuck.site,
                       held_by=stuck.held_by, by=stuck.by)
    return _moving(rank, case, moved, stuck)


def _since_stop(rank: RankFigures, moved: Progress, case: _Case) -> Progress:
    """Progress between the looks that all came before the rank's steps stopped is no progress now: steps counted
    at the recent look and now, unchanged, with nothing else moved since (NCCL's counts, the recorder's). Only steps
    say it: they advance every step, where NCCL's counts are asked only now and then."""
    lately = case.lately.get((rank.host, rank.rank))
    if not moved.job or lately is None or rank.steps is None or lately.steps != rank.steps:
        return moved
    return moved if progress(rank, lately, case.t).job else Progress((), moved.motion)


def _counted(rank: RankFigures) -> bool:
    """Whether the rank has a count that shows progress between two looks: NCCL's, steps, a recorder's dump."""
    return bool(rank.collectives) or rank.steps is not None or (rank.flight is not None and
                                                                rank.flight.dump is not None)


class _Stuck(NamedTuple):
    state: RankState
    words: str
    agree: tuple[str, ...]
    blamed: bool = True
    collective: str | None = None
    since: float | None = None
    site: str | None = None
    held_by: tuple[int, ...] = ()
    by: str = ""


def _record(rank: RankFigures, state: RankState, words: str, *, agree: tuple[str, ...] = (),
            disagree: tuple[str, ...] = (), blamed: bool = False, collective: str | None = None,
            since: float | None = None, site: str | None = None, held_by: tuple[int, ...] = (),
            by: str = "") -> Verdict:
    return Verdict(rank.rank, rank.host, state, words, pid=rank.pid, gpu=rank.gpu, blamed=blamed,
                   collective=collective, since=since, site=site, held_by=held_by, by=by, agree=agree,
                   disagree=disagree)


def _dead(rank: RankFigures, case: _Case) -> Verdict | None:
    if rank.nccl_state in DEAD_STATES:
        what = "NCCL's RAS has given up on it (DEAD)" if rank.nccl_state == "DEAD" else \
            "NCCL's RAS cannot reach it (UNRESPONSIVE)"
        return _record(rank, "dead", f"is dead or unresponsive: {what}", blamed=True, agree=(f"NCCL RAS: {what}",),
                       by="nccl")
    call = case.stacks
    if call is not None and call.kind == "gone" and call.odd is rank:
        return _record(rank, "dead", "is dead or unresponsive: its figures stopped while the others wait for it",
                       blamed=True, agree=call.evidence, by="stacks")
    return None


def _site(rank: RankFigures) -> str | None:
    return (rank.still.site or rank.still.frame) if rank.still is not None else rank.site


def _stuck(rank: RankFigures, case: _Case, moved: Progress) -> _Stuck | None:
    """The strongest claim that the rank is stuck, with every other signal that agrees."""
    key = (rank.host, rank.rank)
    claim = case.flight.get(key)
    still = stillness(rank, case.t)
    site = _site(rank)
    extra = tuple(x for x in (still,) if x)
    if claim is not None:
        return _from_flight(rank, claim, site, extra)
    ras = case.ras.get(key)
    if ras is not None:
        kind, words, held = ras
        state: RankState = "before-collective" if kind == "before" else "inside-collective"
        at = f"; it is at {site}" if site and kind == "before" else ""
        stacks = _from_stacks(rank, case.stacks, site, ())
        agree = stacks.agree if stacks is not None and stacks.state == state else ()  # the stacks say so too
        return _Stuck(state, words + at, (f"NCCL RAS: {words}", *agree, *extra), blamed=not held, site=site,
                      held_by=held, by="nccl")
    stacks = _from_stacks(rank, case.stacks, site, extra)
    if stacks is not None:
        return stacks
    if still is None or rank.still is None or moved.motion:  # its own motion outweighs a still stack
        return None
    since = rank.seen_at - rank.still.seconds if rank.seen_at is not None else None
    if rank.still.category == "collective":  # waits in one: for whom, its stack cannot say
        return _Stuck("inside-collective", f"has waited in a collective at {site or '?'} for "
                      f"{rank.still.seconds:.0f} s", (still,), blamed=False, since=since, site=site, by="still-stack")
    return _Stuck("before-collective", f"has stopped at {site or '?'}", (still,), since=since, site=site,
                  by="still-stack")


def _from_flight(rank: RankFigures, claim: FlightClaim, site: str | None, extra: tuple[str, ...]) -> _Stuck:
    from hwtop.advice.rank_flight import _ranks

    if claim.kind == "before":
        at = f"; it is at {site}" if site else ""
        return _Stuck("before-collective", f"never launched {claim.collective}, which {_ranks(claim.peers)} "
                      f"launched and wait in{at}", (claim.evidence, *extra), collective=claim.collective,
                      since=claim.launched.created_at, site=site, by="flight-recorder")
    held = f", waiting for {_ranks(claim.peers)}, which never launched it" if claim.peers else ""
    return _Stuck("inside-collective", f"launched {claim.collective} and never finished it{held}",
                  (claim.evidence, *extra), blamed=not claim.peers, collective=claim.collective,
                  since=claim.launched.created_at, site=claim.launched.site or site, held_by=claim.peers,
                  by="flight-recorder")


def _from_stacks(rank: RankFigures, call: StackCall | None, site: str | None, extra: tuple[str, ...]) -> _Stuck | None:
    if call is None or call.kind not in ("hang", "unseen", "gone"):
        return None
    if call.odd is rank and call.kind == "hang":
        at = f"; it is at {site}" if site else ""
        return _Stuck("before-collective", f"never reached the collective the others wait in{at}",
                      (*call.evidence, *extra), site=site, by="stacks")
    if rank in call.others:
        held = (call.odd.rank,) if call.odd is not None else ()
        whom = f"rank {call.odd.rank}" if call.odd is not None else "a rank not among the ranks seen"
        return _Stuck("inside-collective", f"waits in a collective for {whom}", (*call.evidence, *extra),
                      blamed=False, held_by=held, by="stacks")
    return None


def _moving(rank: RankFigures, case: _Case, moved: Progress, stuck: _Stuck | None) -> Verdict:
    """Not stuck (or stuck, outweighed by progress): slow when the others wait for it, else running or unknown."""
    against = stuck.agree if stuck is not None else ()
    call = case.stacks
    odd = call is not None and call.odd is rank and call.kind in ("straggler", "hang")
    if odd and call is not None:
        cause = _cause(rank, case.t)
        return _record(rank, "slow", f"is slow: the others wait for it ({cause})", blamed=True,
                       agree=(*call.evidence, *moved.job), disagree=against, site=rank.site,
                       by="stacks")
    agree = (*moved.job, *moved.motion)
    if agree:
        return _record(rank, "running", "is running", agree=agree, disagree=against, by="progress")
    if rank.samples >= case.t["stack_min_samples"] or (rank.nccl_state == "RUNNING" and case.span_s is None):
        return _record(rank, "running", "is running", agree=_quiet_signals(rank), disagree=against)
    return _record(rank, "unknown", _unknown(rank, case.t), disagree=against)


def _quiet_signals(rank: RankFigures) -> tuple[str, ...]:
    out = []
    if rank.samples:
        out.append(f"{pct(rank.collective_share)} of its {rank.samples} stack samples in collectives")
    if rank.nccl_state is not None:
        out.append(f"NCCL RAS: {rank.nccl_state}")
    return tuple(out)


def _unknown(rank: RankFigures, t: Thresholds) -> str:
    if rank.nccl_only:
        return "cannot be judged: NCCL's RAS lists it, and no hwtop reads its stacks"
    return f"cannot be judged: too few stack samples ({rank.samples} of the {t['stack_min_samples']:.0f} a share " \
           "needs)"


def _cause(rank: RankFigures, t: Thresholds) -> str:
    """What the slow rank does instead of waiting, in a few words (the rule adds what the host knows)."""
    if rank.share("data") >= t["data_wait_fraction"]:
        return f"it waits for data {pct(rank.share('data'))} of its samples"
    phase, share = max(rank.shares, key=lambda item: item[1], default=("", 0.0))
    doing = f"{pct(share)} {phase}" if phase else "no samples"
    return f"{doing}" + (f" at {rank.site}" if rank.site else "") + \
        f", {pct(rank.collective_share)} in collectives"


def _with_faults(verdict: Verdict, faults: Sequence[GpuFault]) -> Verdict:
    """The GPU's faults on the rank that owns it: in its words where they stop work, in its signals always."""
    if not faults:
        return verdict
    said = [f"its GPU {f.gpu} " + (f"raised {f.what}" if f.severe else f"is {f.what}") +
            (f" at {clock(f.at)}" if f.at is not None else "") for f in faults]
    severe = [s for s, f in zip(said, faults, strict=True) if f.severe]
    words, blamed = verdict.words, verdict.blamed
    if verdict.state in ("before-collective", "inside-collective", "dead") and severe:
        words, blamed = f"{words}; {severe[0]}", True
    elif verdict.state == "slow":
        words = f"{words}; {said[0]}"
    import msgspec.structs

    return msgspec.structs.replace(verdict, words=words, blamed=blamed, faults=tuple(faults),
                                   agree=(*verdict.agree, *said))


def _ras_claims(ranks: Sequence[RankFigures], earlier: Mapping[tuple[str, int], RankFigures], span: float | None,
                t: Thresholds) -> dict[tuple[str, int], tuple[str, str, tuple[int, ...]]]:
    """From NCCL's launch counts at two looks ras_hang_s apart: unchanged, and unequal. A rank behind launched
    fewer than the most advanced (it never launched the collective the others wait in); the others wait in it."""
    if span is None or span < t["ras_hang_s"]:
        return {}
    unchanged = [r for r in ranks if r.lag is not None and launched(r) is not None and
                 launched(earlier.get((r.host, r.rank)) or RankFigures(-1, "")) == launched(r)]
    behind = [r for r in unchanged if (r.lag or 0) > 0]
    if not behind:
        return {}
    most: dict[str, int] = {}
    for r in ranks:
        for op, value in r.collectives:
            most[op] = max(most.get(op, 0), value)
    held = tuple(r.rank for r in behind)
    return {(r.host, r.rank): _ras_claim(r, r in behind, most, held, span) for r in unchanged}


def _ras_claim(rank: RankFigures, is_behind: bool, most: dict[str, int], held: tuple[int, ...],
               span: float) -> tuple[str, str, tuple[int, ...]]:
    counts = dict(rank.collectives)
    op = next((op for op, value in most.items() if counts.get(op, 0) < value), None)
    if is_behind and op is not None:
        return ("before", f"has not launched {op} #{most[op]}, which the others launched; no count changed for "
                f"{span:.0f} s", ())
    top = max(most, key=lambda name: most[name])
    return ("inside", f"launched {top} #{most[top]} and waits in it for rank{'s' if len(held) > 1 else ''} "
            f"{', '.join(map(str, held[:6]))}", held)


def missing_figure(ranks: Sequence[RankFigures], t: Thresholds) -> str | None:
    """Why no verdict can be given from the stacks, in one line, or None when the figures suffice."""
    ranks = [r for r in ranks if not r.nccl_only]
    if len(ranks) < 2:
        return "fewer than two ranks seen" if ranks else "no rank figures (py-spy missing or ptrace refused?)"
    known = [r for r in ranks if r.samples >= t["stack_min_samples"]]
    if len(known) < 2:
        return (f"too few stack samples ({max((r.samples for r in ranks), default=0)} of the "
                f"{t['stack_min_samples']:.0f} a share needs)")
    unread = [r for r in ranks if r.samples < t["stack_min_samples"]]
    if unread:  # no rank is named while one of them might be it
        more = f" and {len(unread) - 1} more" if len(unread) > 1 else ""
        return (f"{who(unread[0])}{more}: too few stack samples ({unread[0].samples} of the "
                f"{t['stack_min_samples']:.0f} a share needs), so none is named")
    return None


def stale(rank: RankFigures, newest: float | None, t: Thresholds) -> bool:
    """Its figures stopped arriving while others' still do (the rank, or its host's hwtop, stopped)."""
    return rank.seen_at is not None and newest is not None and newest - rank.seen_at > t["rank_stale_s"]


def steady_lag(rank: RankFigures, before: RankFigures | None, behind: Mapping[int, int] | None = None) -> int:
    """Collectives behind, judged over queries: the least of two looks where an earlier one is known, else its lag
    where NCCL's view found it behind in more than one of its recent queries (`behind`: rank -> queries behind),
    else its lag as it is. One behind once is a query catching a collective in flight, which NCCL's ras.rst calls
    normal, not a rank worse than the others."""
    if rank.lag is None:
        return 0
    if before is not None and before.lag is not None:
        return min(rank.lag, before.lag)
    if behind is not None:
        return rank.lag if behind.get(rank.rank, 0) > 1 else 0
    return rank.lag


def worst_first(now: Look, before: Look | None, verdicts: Verdicts,
                behind: Mapping[int, int] | None = None) -> list[RankFigures]:
    """The blamed ranks first, then by state (dead, never launched, not finished, slow, unknown, running), then by
    how many collectives behind they stayed across the looks (steady_lag)."""
    earlier = {(r.host, r.rank): r for r in before.ranks} if before is not None else {}
    judged = {(v.host, v.rank): v for v in verdicts.ranks}
    order = {state: i for i, state in enumerate(STATES)}

    def key(r: RankFigures) -> tuple[bool, int, int, int, str]:
        v = judged.get((r.host, r.rank))
        return (not (v is not None and v.blamed), order.get(v.state, len(order)) if v is not None else len(order),
                -steady_lag(r, earlier.get((r.host, r.rank)), behind), r.rank, r.host)

    return sorted(now.ranks, key=key)


# ----- the stack-only judgement the rules read until they read `judge` (advice/rules: collective, straggler) -----

Kind = Literal["straggler", "hang"]


@dataclass(frozen=True, slots=True)
class RankVerdict:
    """`rank` is None for a hang where every watched rank waits: the one that never arrived is not watched."""

    kind: Kind
    rank: RankFigures | None
    waiting: tuple[RankFigures, ...]  # the ranks held back
    evidence: tuple[str, ...]

    @property
    def named(self) -> str:
        if self.rank is None:
            return "a rank no exporter watches"
        return f"rank {self.rank.rank} on {self.rank.host}" + (f" (pid {self.rank.pid})" if self.rank.pid else "")


_VERDICT: LastAnswer[RankVerdict | None] = LastAnswer()


def judge_ranks(ranks: Sequence[RankFigures], t: Thresholds) -> RankVerdict | None:
    """The rank that holds the others back (a straggler), or the one that never reached the collective they all
    wait in (a hang), from the stacks alone; remembered for the same ranks (a snapshot's tuple)."""
    limits = (t["stack_min_samples"], t["rank_stale_s"], t["straggler_peer_wait_share"], t["rank_hang_wait_share"],
              t["straggler_own_wait_ratio"])

    def work() -> RankVerdict | None:
        call = stack_call(ranks, t)
        if call is None:
            return None
        return RankVerdict("straggler" if call.kind == "straggler" else "hang", call.odd, call.others, call.evidence)

    return _VERDICT.ask(ranks, limits, work) if isinstance(ranks, tuple) else work()


__all__ = ["Look", "RankVerdict", "judge", "judge_ranks", "missing_figure", "newest_seen", "stale", "steady_lag",
           "worst_first"]
