"""A Frame is what one tick produced: the snapshot and the advice on it. It is immutable, so the worker thread
that made it and the UI, exporter or recorder that read it never share anything that changes."""

from __future__ import annotations

from hwtop.model.finding import Change, Finding
from hwtop.model.history import Recent
from hwtop.model.record import Record
from hwtop.model.snapshot import Snapshot


class Frame(Record, frozen=True):
    snapshot: Snapshot
    findings: tuple[Finding, ...] = ()
    rule_errors: tuple[tuple[str, str], ...] = ()  # (rule id, what it raised): named in the pane, never a crash
    recorded: bool = False  # the findings come from a recording, as the live run showed them
    timeline: tuple[Change, ...] = ()  # what was raised and cleared up to this tick (advice/timeline.py)
    history: Recent = Recent()  # the sparklines' values up to this tick (not recorded: a replay warms its own)
    advised: bool = True  # False: the rules have not run yet (the monitor's first frame); they do from the next tick

    @property
    def time(self) -> float:
        return self.snapshot.time

    @property
    def serious(self) -> tuple[Finding, ...]:
        """Findings at warning or above: the ones that mark GPUs and cores and make `doctor` exit 1."""
        return tuple(f for f in self.findings if f.severity != "info")
