"""Which rank holds a job back, judged from its ranks' figures alone — one pure function, so the one-node rule
(a focused job's `JobSnapshot.ranks`) and the fleet (the same figures rebuilt from Prometheus for every host)
name the same rank for the same numbers.

The signal is DDP's own: every all-reduce waits for the slowest rank, so the ranks that are on time spend a
large share of their main thread in a collective wait and the one that is late spends little. When the others
wait almost all the time, nobody is making steps: the odd one out never reached the collective (a hang). A rank
whose figures stopped arriving while the others wait is named the same way. Shares from too few stack samples
say nothing, and the verdict stays silent rather than guess."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from hwtop.advice.last_answer import LastAnswer
from hwtop.advice.thresholds import Thresholds
from hwtop.model.job import RankFigures

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


def _who(rank: RankFigures) -> str:
    pid = f"pid {rank.pid}, " if rank.pid is not None else ""
    return f"rank {rank.rank} ({pid}host {rank.host})"


def _pct(share: float) -> str:
    return f"{100 * share:.0f}%"


def _span(waits: Sequence[float]) -> str:
    low, high = _pct(min(waits)), _pct(max(waits))
    return high if low == high else f"{low}-{high}"  # "100%-100%" reads as a typo


def _top_phase(rank: RankFigures) -> str:
    phase, share = max(rank.shares, key=lambda item: item[1], default=("", 0.0))
    return f"{_pct(share)} {phase}" if phase else "no samples"


def stale(rank: RankFigures, newest: float | None, t: Thresholds) -> bool:
    """Its figures stopped arriving while others' still do (the rank, or its host's hwtop, stopped)."""
    return rank.seen_at is not None and newest is not None and newest - rank.seen_at > t["rank_stale_s"]


def missing_figure(ranks: Sequence[RankFigures], t: Thresholds) -> str | None:
    """Why no verdict can be given, in one line, or None when the figures suffice."""
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
        return (f"{_who(unread[0])}{more}: too few stack samples ({unread[0].samples} of the "
                f"{t['stack_min_samples']:.0f} a share needs), so none is named")
    return None


def judge_ranks(ranks: Sequence[RankFigures], t: Thresholds) -> RankVerdict | None:
    """The rank that holds the others back (a straggler), or the one that never reached the collective they all
    wait in (a hang); None for a balanced job or when the figures do not say. Ranks known from NCCL RAS alone
    (`nccl_only`: no stacks expected) are advice/nccl_ranks.py's. The last verdict is remembered for the same
    ranks (the same tuple: a snapshot's) under the same thresholds: two rules ask it of each tick's 256 ranks."""
    limits = (t["stack_min_samples"], t["rank_stale_s"], t["straggler_peer_wait_share"], t["rank_hang_wait_share"],
              t["straggler_own_wait_ratio"])
    if not isinstance(ranks, tuple):  # only an immutable sequence is remembered
        return _judge(ranks, *limits)
    return _VERDICT.ask(ranks, limits, lambda: _judge(ranks, *limits))


_VERDICT: LastAnswer[RankVerdict | None] = LastAnswer()


def _judge(ranks: Sequence[RankFigures], min_samples: float, stale_s: float, peer_wait: float, hang_wait: float,
           own_ratio: float) -> RankVerdict | None:
    ranks = [r for r in ranks if not r.nccl_only]
    newest = max((r.seen_at for r in ranks if r.seen_at is not None), default=None)
    gone = [r for r in ranks if r.seen_at is not None and newest is not None and newest - r.seen_at > stale_s]
    live = [r for r in ranks if r not in gone] if gone else ranks
    known = [r for r in live if r.samples >= min_samples]
    if not known:
        return None
    waits = [r.collective_share for r in known]
    if gone and min(waits) >= peer_wait:
        late = max(gone, key=lambda r: (newest or 0.0) - (r.seen_at or 0.0))
        age = (newest or 0.0) - (late.seen_at or 0.0)
        return RankVerdict("hang", late, tuple(known), (
            f"{_who(late)}: no new figures for {age:.0f} s",
            f"the others wait in a collective {_span(waits)} of the time"))
    if len(known) < len(live):  # never named from some of the ranks while others are unread
        return None
    if min(waits) >= hang_wait:  # even one rank alone: a collective needs a peer it waits for
        every = f"all {len(known)} watched ranks wait" if len(known) > 1 else f"{_who(known[0])}, the one rank " \
            "seen, waits"
        return RankVerdict("hang", None, tuple(known), (
            f"{every} in a collective ({_pct(min(waits))} or more of the time): the rank they wait for is not among "
            "the ranks seen",))
    if len(known) < 2:
        return None
    at = min(range(len(known)), key=lambda i: (waits[i], known[i].rank, known[i].host))
    odd = known[at]
    others = [r for r in known if r is not odd]
    other_waits = [w for r, w in zip(known, waits, strict=True) if r is not odd]
    typical = statistics.median(other_waits)
    if typical < peer_wait or waits[at] > typical * own_ratio:
        return None
    kind: Kind = "hang" if min(other_waits) >= hang_wait else "straggler"
    spent = f"{_who(odd)}: {_pct(odd.collective_share)} in collectives, {_top_phase(odd)}" + \
        (f" at {odd.site}" if odd.site else "")
    held = (f"the other {len(others)} rank{'s' if len(others) != 1 else ''} wait in a collective "
            f"{_span(other_waits)} of the time" if len(others) > 1 else
            f"{_who(others[0])} waits in a collective {_pct(other_waits[0])} of the time")
    if kind == "hang":
        held += ": no rank makes progress"
    return RankVerdict(kind, odd, tuple(others), (spent, held))


def worst_first(ranks: Sequence[RankFigures], verdict: RankVerdict | None, t: Thresholds) -> list[RankFigures]:
    """The named rank first, then ranks whose figures stopped, then by how little they wait (the late ones)."""
    newest = max((r.seen_at for r in ranks if r.seen_at is not None), default=None)
    named = verdict.rank if verdict is not None else None
    return sorted(ranks, key=lambda r: (r is not named, not stale(r, newest, t), r.samples < t["stack_min_samples"],
                                        r.collective_share, r.host, r.rank))
