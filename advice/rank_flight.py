"""What the ranks' Flight Recorder dumps say of a hang, pure: per process group, the newest collective any rank
launched, who launched it and who never did, and who launched one and never finished it. Each rank's dump is its
own moment (ranks are dumped a second or more apart: a healthy job's dumps differ by dozens of collectives), so a
claim holds only where a collective had been waited for `rank_hang_s` at the moment of the rank's own dump."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from hwtop.model.flight import FlightCollective, FlightGroup
from hwtop.model.job import RankFigures


class FlightClaim(NamedTuple):
    """A rank's state as the recorder has it: "before" (never launched `collective`, which `peers` launched) or
    "inside" (launched it and never finished it; `peers` are the ranks of its group that never launched it)."""

    kind: str  # before | inside
    collective: str  # "all_reduce #26 (default_pg)"
    launched: FlightCollective  # the collective as the ranks that launched it recorded it
    age_s: float  # how long it had been waited for at the rank's dump
    peers: tuple[int, ...]
    evidence: str


def name(c: FlightCollective, group: FlightGroup) -> str:
    return f"{c.op} #{c.seq} ({group.desc or 'group ' + group.pg})"


def _groups(ranks: Sequence[RankFigures]) -> dict[str, list[tuple[RankFigures, FlightGroup, float]]]:
    out: dict[str, list[tuple[RankFigures, FlightGroup, float]]] = {}
    for r in ranks:
        dump = r.flight.dump if r.flight is not None else None
        for g in dump.groups if dump is not None else ():
            out.setdefault(g.pg, []).append((r, g, dump.dumped_at if dump is not None else 0.0))
    return out


def _ranks(numbers: Sequence[int]) -> str:
    listed = [str(n) for n in sorted(numbers)[:6]] + ([f"{len(numbers) - 6} more"] if len(numbers) > 6 else [])
    word = "rank" if len(numbers) == 1 else "ranks"
    return f"{word} {listed[0]}" if len(listed) == 1 else f"{word} {', '.join(listed[:-1])} and {listed[-1]}"


def flight_claims(ranks: Sequence[RankFigures], hang_s: float) -> dict[tuple[str, int], FlightClaim]:
    """(host, rank) -> its claim, for the ranks the recorder finds stuck; the first group that says so wins."""
    out: dict[tuple[str, int], FlightClaim] = {}
    for members in _groups(ranks).values():
        behind = _never_launched(members, hang_s, out)
        for r, g, at in members:
            pending = g.pending
            if pending is None or pending.created_at is None or at - pending.created_at < hang_s:
                continue
            label = name(pending, g)
            out.setdefault((r.host, r.rank), FlightClaim(
                "inside", label, pending, at - pending.created_at, behind,
                f"Flight Recorder: launched {label} at {pending.site or '?'} and had not finished it "
                f"{at - pending.created_at:.0f} s later (its last completed: #{g.completed})"))
    return out


def _never_launched(members: list[tuple[RankFigures, FlightGroup, float]], hang_s: float,
                    out: dict[tuple[str, int], FlightClaim]) -> tuple[int, ...]:
    """The group's ranks that never launched its newest collective, `hang_s` after the first rank did (at their
    own dump), claimed in `out`; their numbers."""
    top = max(members, key=lambda m: m[1].launched)
    newest = top[1].newest
    if newest is None or newest.created_at is None or newest.seq != top[1].launched:
        return ()
    started = min((g.newest.created_at for _, g, _ in members if g.newest is not None and
                   g.newest.seq == newest.seq and g.newest.created_at is not None), default=newest.created_at)
    behind = [(r, g, at) for r, g, at in members if g.launched < newest.seq and at - started >= hang_s]
    launched = tuple(r.rank for r, g, _ in members if g.launched >= newest.seq)
    label = name(newest, top[1])
    for r, g, at in behind:
        out.setdefault((r.host, r.rank), FlightClaim(
            "before", label, newest, at - started, launched,
            f"Flight Recorder: its dump {at - started:.0f} s after {_ranks(launched)} launched {label} "
            f"(at {newest.site or '?'}) has it at #{g.launched}, never launched"))
    return tuple(r.rank for r, _, _ in behind)


def completed_since(now: RankFigures, before: RankFigures | None) -> str | None:
    """The recorder's own sign of progress: a later dump of the rank with more collectives completed."""
    new = now.flight.dump if now.flight is not None else None
    old = before.flight.dump if before is not None and before.flight is not None else None
    if new is None or old is None or new.dumped_at <= old.dumped_at:
        return None
    for g in new.groups:
        was = old.group(g.pg)
        if was is not None and g.completed > was.completed:
            return f"Flight Recorder: {g.desc or 'group ' + g.pg} completed #{was.completed} → #{g.completed} " \
                   "between two dumps"
    return None
