"""A finding: what is wrong, the measured numbers that say so, and the concrete fix; and a Change, one line of
the advice's timeline: a finding raised or cleared, when, and its worst figure."""

from __future__ import annotations

from hwtop.model.record import Record

SEVERITIES = ("critical", "warning", "info")  # most severe first


class Finding(Record, frozen=True):
    """`scope` names where it applies ("GPU0", "rank 1", "" for the box); the engine keys hysteresis on
    (id, scope). `since` is when its condition started holding, filled in by the engine.

    One cause is one finding: a rule marks findings that share a cause and a fix with the same `cause` (a short
    name, such as "thermal"), and the engine shows them as one whose `covers` lists the members' scopes, `scope`
    names them compactly ("GPU0-7") and whose evidence is the worst member's (the highest `measure`, in the rule's
    own unit). `held_at` is when its condition last held, the time its evidence is from: earlier than the tick
    it is shown on, the finding is only waiting out its clear time."""

    id: str
    severity: str
    title: str
    evidence: tuple[str, ...]
    fix: tuple[str, ...]
    scope: str = ""
    gpus: tuple[int, ...] = ()
    cores: tuple[int, ...] = ()
    pids: tuple[int, ...] = ()
    since: float | None = None
    cause: str = ""
    covers: tuple[str, ...] = ()
    measure: float | None = None
    held_at: float | None = None

    @property
    def key(self) -> tuple[str, str]:
        """What the pane, doctor and the exporter tell findings apart by: one per cause of each rule."""
        return (self.id, self.cause or self.scope)

    @property
    def severity_order(self) -> int:
        """Its severity's place in SEVERITIES, 0 the most severe: what findings are sorted by."""
        return SEVERITIES.index(self.severity)

    @property
    def count(self) -> int:
        """How many GPUs, ranks, processes… this one finding covers (1 for an ungrouped one)."""
        return max(1, len(self.covers))

    def clearing(self, now: float | None) -> bool:
        """Shown at `now` although its condition no longer holds (waiting out its clear time)."""
        return self.held_at is not None and now is not None and self.held_at < now

    def to_dict(self) -> dict[str, object]:
        return {"id": self.id, "severity": self.severity, "title": self.title, "scope": self.scope,
                "evidence": list(self.evidence), "fix": list(self.fix), "gpus": list(self.gpus),
                "cores": list(self.cores), "pids": list(self.pids), "since": self.since, "cause": self.cause,
                "covers": list(self.covers), "count": self.count, "measure": self.measure, "held_at": self.held_at}


class Change(Record, frozen=True):
    """`what` is "raised" or "cleared". `figure` is the finding's first evidence line: as it was when raised, and
    at its worst (the rule's `measure`) when cleared; `held_s`, on a clearing, is how long it was shown. `cause`
    and `scope` are the finding's, so (id, cause or scope) is its key as the pane's."""

    time: float
    what: str
    id: str
    severity: str
    title: str
    scope: str = ""
    cause: str = ""
    figure: str = ""
    held_s: float | None = None

    @property
    def key(self) -> tuple[str, str]:
        return (self.id, self.cause or self.scope)

    def to_dict(self) -> dict[str, object]:
        return {"time": self.time, "what": self.what, "id": self.id, "severity": self.severity, "title": self.title,
                "scope": self.scope, "cause": self.cause, "figure": self.figure, "held_s": self.held_s}
