"""The signals a rank's verdict weighs, each pure and each in words with its figures: progress between two looks
at the job (steps, NCCL's launch counts, the recorder's completed collectives) and motion of its own (its main
thread on a CPU, a stack that changes), what the ranks' stacks say of who waits for whom (the collective-wait
shares: DDP's all-reduce waits for the slowest rank), and the faults of the GPUs they own."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import NamedTuple

from hwtop.advice.rank_flight import completed_since
from hwtop.advice.thresholds import Thresholds
from hwtop.model.job import RankFigures


def who(rank: RankFigures) -> str:
    pid = f"pid {rank.pid}, " if rank.pid is not None else ""
    return f"rank {rank.rank} ({pid}host {rank.host})"


def pct(share: float) -> str:
    return f"{100 * share:.0f}%"


def launched(rank: RankFigures) -> int | None:
    return sum(value for _, value in rank.collectives) if rank.collectives else None


class Progress(NamedTuple):
    job: tuple[str, ...]  # collectives or steps completed since the earlier look: the job moves through this rank
    motion: tuple[str, ...]  # its main thread runs, or its stack changes: it is not blocked where it stands


def progress(now: RankFigures, before: RankFigures | None, t: Thresholds) -> Progress:
    job = []
    if before is not None:
        if now.steps is not None and before.steps is not None and now.steps > before.steps:
            job.append(f"steps {before.steps} → {now.steps}")
        new, old = launched(now), launched(before)
        if new is not None and old is not None and new > old:
            job.append(f"NCCL: collectives launched {old} → {new}")
        completed = completed_since(now, before)
        if completed:
            job.append(completed)
    motion = []
    if now.main_running is not None and 100 * now.main_running > t["stuck_cpu_percent"]:
        motion.append(f"its main thread is on a CPU {pct(now.main_running)} of the time")
    if now.samples >= t["stack_min_samples"] and now.still is None:
        motion.append(f"its stack changes between samples ({now.samples} samples)")
    return Progress(tuple(job), tuple(motion))


def stillness(rank: RankFigures, t: Thresholds) -> str | None:
    """Its main thread's stack has not moved for stuck_stack_s: evidence of a stop, never a verdict alone."""
    still = rank.still
    if still is None or still.seconds < t["stuck_stack_s"]:
        return None
    where = still.site or still.frame or "?"
    return f"its main thread's stack has not moved for {still.seconds:.0f} s ({still.samples} samples at {where})"


class StackCall(NamedTuple):
    """What the ranks' stacks say: `straggler` (one waits far less than the others, who wait for it), `hang`
    (the others wait almost all the time: it never reached the collective), `gone` (its figures stopped while the
    others wait), `unseen` (every watched rank waits: the one they wait for is not among them)."""

    kind: str
    odd: RankFigures | None
    others: tuple[RankFigures, ...]
    evidence: tuple[str, ...]


def newest_seen(ranks: Sequence[RankFigures]) -> float | None:
    return max((r.seen_at for r in ranks if r.seen_at is not None), default=None)


def stack_call(ranks: Sequence[RankFigures], t: Thresholds) -> StackCall | None:
    """Ranks known from NCCL alone (`nccl_only`) have no stacks; shares from too few samples say nothing."""
    ranks = [r for r in ranks if not r.nccl_only]
    newest = newest_seen(ranks)
    gone = [r for r in ranks if r.seen_at is not None and newest is not None and
            newest - r.seen_at > t["rank_stale_s"]]
    live = [r for r in ranks if r not in gone] if gone else ranks
    known = [r for r in live if r.samples >= t["stack_min_samples"]]
    if not known:
        return None
    if gone:
        return _gone(gone, known, newest or 0.0, t)
    if len(known) < len(live):  # never named from some of the ranks while others are unread
        return None
    waits = [r.collective_share for r in known]
    if min(waits) >= t["rank_hang_wait_share"]:  # even one rank alone: a collective needs a peer it waits for
        every = f"all {len(known)} watched ranks wait" if len(known) > 1 else f"{who(known[0])}, the one rank " \
            "seen, waits"
        return StackCall("unseen", None, tuple(known), (
            f"{every} in a collective ({pct(min(waits))} or more of the time): the rank they wait for is not among "
            "the ranks seen",))
    return _odd(known, t) if len(known) >= 2 else None


def _gone(gone: list[RankFigures], known: list[RankFigures], newest: float, t: Thresholds) -> StackCall | None:
    waits = [r.collective_share for r in known]
    if min(waits) < t["straggler_peer_wait_share"]:
        return None
    late = max(gone, key=lambda r: newest - (r.seen_at or 0.0))
    return StackCall("gone", late, tuple(known), (
        f"{who(late)}: no new figures for {newest - (late.seen_at or 0.0):.0f} s",
        f"the others wait in a collective {_span(waits)} of the time"))


def _span(waits: Sequence[float]) -> str:
    low, high = pct(min(waits)), pct(max(waits))
    return high if low == high else f"{low}-{high}"  # "100%-100%" reads as a typo


def _odd(known: list[RankFigures], t: Thresholds) -> StackCall | None:
    waits = [r.collective_share for r in known]
    at = min(range(len(known)), key=lambda i: (waits[i], known[i].rank, known[i].host))
    odd = known[at]
    others = [r for r in known if r is not odd]
    other_waits = [r.collective_share for r in others]
    if statistics.median(other_waits) < t["straggler_peer_wait_share"] or \
            waits[at] > statistics.median(other_waits) * t["straggler_own_wait_ratio"]:
        return None
    hang = min(other_waits) >= t["rank_hang_wait_share"]
    phase, share = max(odd.shares, key=lambda item: item[1], default=("", 0.0))
    spent = f"{who(odd)}: {pct(odd.collective_share)} in collectives, " + \
        (f"{pct(share)} {phase}" if phase else "no samples") + (f" at {odd.site}" if odd.site else "")
    held = (f"the other {len(others)} ranks wait in a collective {_span(other_waits)} of the time"
            if len(others) > 1 else f"{who(others[0])} waits in a collective {pct(other_waits[0])} of the time")
    return StackCall("hang" if hang else "straggler", odd, tuple(others),
                     (spent, held + (": no rank makes progress" if hang else "")))
