"""A Frame is what one tick produced: the snapshot and the advice on it. It is immutable, so the worker thread
that made it and the UI, exporter or recorder that read it never share anything that changes."""

from __future__ import annotations

from typing import TYPE_CHECKING

import hwtop
from hwtop.model.finding import Change, Finding
from hwtop.model.history import Recent
from hwtop.model.record import Record
from hwtop.model.snapshot import Snapshot

if TYPE_CHECKING:  # a job's verdicts load with a job, not with every tick (tests/hwtop/test_import_hygiene.py)
    import hwtop.model.verdict


class Frame(Record, frozen=True):
    snapshot: Snapshot
    findings: tuple[Finding, ...] = ()
    rule_errors: tuple[tuple[str, str], ...] = ()  # (rule id, what it raised): named in the pane, never a crash
    recorded: bool = False  # the findings come from a recording, as the live run showed them
    timeline: tuple[Change, ...] = ()  # what was raised and cleared up to this tick (advice/timeline.py)
    history: Recent = Recent()  # the sparklines' values up to this tick (not recorded: a replay warms its own)
    advised: bool = True  # False: the rules have not run yet (the monitor's first frame); they do from the next tick
    # every rank's verdict (advice/rank_window.py window_verdicts), the very answer the rules read this tick: the job
    # view's STATE column and the exporter's hwtop_job_rank_state say what the findings say. None without a running
    # job of two ranks or more, before the rules ran, and in a replay of recorded findings (not recorded)
    verdicts: hwtop.model.verdict.Verdicts | None = None  # named in full, as model/snapshot.py names the job

    @property
    def time(self) -> float:
        return self.snapshot.time

    @property
    def serious(self) -> tuple[Finding, ...]:
        """Findings at warning or above: the ones that mark GPUs and cores and make `doctor` exit 1."""
        return tuple(f for f in self.findings if f.severity != "info")
