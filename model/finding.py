"""A finding: what is wrong, the measured numbers that say so, and the concrete fix."""

from __future__ import annotations

from hwtop.model.record import Record

SEVERITIES = ("critical", "warning", "info")  # most severe first


class Finding(Record, frozen=True):
    """`scope` names where it applies ("GPU0", "rank 1", "" for the box); the engine keys hysteresis on
    (id, scope). `since` is when its condition started holding, filled in by the engine."""

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

    @property
    def key(self) -> tuple[str, str]:
        return (self.id, self.scope)

    @property
    def rank(self) -> int:
        return SEVERITIES.index(self.severity)

    def to_dict(self) -> dict[str, object]:
        return {"id": self.id, "severity": self.severity, "title": self.title, "scope": self.scope,
                "evidence": list(self.evidence), "fix": list(self.fix), "gpus": list(self.gpus),
                "cores": list(self.cores), "pids": list(self.pids), "since": self.since}
