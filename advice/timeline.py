"""What changed, when: the findings raised and cleared over the session, a line per change, so a user who looks
at 14:20 sees what was raised at 14:02 and cleared at 14:05. Derived from the findings shown at each tick (the
engine's live, a recording's as recorded), so a replay tells the story the live run told. Bounded: the last
KEEP_S seconds and at most MAX_CHANGES lines. Headless and pure."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterable

import msgspec
import msgspec.structs

from hwtop.model.finding import Change, Finding

KEEP_S = 3600.0  # an hour of the session: long enough to find the 14:02 slowdown at 14:20
MAX_CHANGES = 200  # and never more lines than this, whatever flickers


class _Open(msgspec.Struct):
    raised: float
    finding: Finding
    worst: Finding


class Shown(msgspec.Struct):
    """A finding over a watch (a Timeline that keeps them: doctor's report): as last shown, when first and last
    shown, and whether it still is."""

    finding: Finding
    first: float
    last: float
    active: bool = True


def _worse(new: Finding, old: Finding) -> bool:
    if new.measure is None or old.measure is None:
        return old.measure is None  # unmeasured: the latest holding figure
    return new.measure > old.measure


class Timeline:
    def __init__(self, keep_s: float = KEEP_S, max_changes: int | None = MAX_CHANGES,
                 keep_shown: bool = False) -> None:
        self.keep_s = keep_s
        self._changes: deque[Change] = deque(maxlen=max_changes)
        self._open: dict[tuple[str, str], _Open] = {}
        self._last: float | None = None
        self.changes: tuple[Change, ...] = ()
        self._keep_shown = keep_shown
        self.shown: dict[tuple[str, str], Shown] = {}  # with keep_shown: every finding shown, cleared ones too

    def reset(self) -> None:
        self._changes.clear()
        self._open.clear()
        self.shown.clear()
        self._last = None
        self.changes = ()

    def seed(self, changes: Iterable[Change]) -> None:
        """Start from a past told elsewhere (a recording's first line): what it left raised counts as shown."""
        for change in changes:
            self._changes.append(change)
            if change.what == "raised":
                finding = Finding(change.id, change.severity, change.title, (change.figure,), (),
                                  scope=change.scope, cause=change.cause)
                self._open[change.key] = _Open(change.time, finding, finding)
            else:
                self._open.pop(change.key, None)
        self.changes = tuple(self._changes)

    def update(self, now: float, findings: Iterable[Finding]) -> tuple[Change, ...]:
        if self._last is not None and now < self._last:
            self.reset()  # time went backwards (a replay seeked): that past no longer leads here
        self._last = now
        shown = {f.key: f for f in findings}
        if self._keep_shown:
            self._keep(now, shown)
        changed = False
        for key, finding in shown.items():
            entry = self._open.get(key)
            if entry is None:
                self._open[key] = _Open(now, finding, finding)
                self._changes.append(Change(now, "raised", finding.id, finding.severity, finding.title,
                                            finding.scope, finding.cause, _figure(finding)))
                changed = True
                continue
            entry.finding = finding
            if not finding.clearing(now) and _worse(finding, entry.worst):
                entry.worst = finding
        for key in [k for k in self._open if k not in shown]:
            entry = self._open.pop(key)
            last = entry.finding
            self._changes.append(Change(now, "cleared", last.id, last.severity, last.title, last.scope, last.cause,
                                        _figure(entry.worst), round(now - entry.raised, 1)))
            changed = True
        while self._changes and self._changes[0].time < now - self.keep_s:
            self._changes.popleft()
            changed = True
        if changed:
            self.changes = tuple(self._changes)
        return self.changes


    def _keep(self, now: float, shown: dict[tuple[str, str], Finding]) -> None:
        for key, finding in shown.items():
            entry = self.shown.get(key)
            if entry is None:
                self.shown[key] = Shown(finding, now, now)
            else:
                entry.finding, entry.last, entry.active = finding, now, True
        for key, entry in self.shown.items():
            if key not in shown:
                entry.active = False


def _figure(finding: Finding) -> str:
    return finding.evidence[0] if finding.evidence else ""


def clock(when: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(when))


FIGURE_CHARS = 100  # of the figure a line quotes: the finding itself has the rest


def describe(change: Change) -> str:
    """One line: `08:26:45 raised WARNING gpu-throttled · GPU0: GPU0 clocks throttled — GPU0 clocks held back…`."""
    where = f" · {change.scope}" if change.scope else ""
    if len(change.figure) > FIGURE_CHARS:
        change = msgspec.structs.replace(change, figure=change.figure[:FIGURE_CHARS - 1] + "…")
    if change.what == "raised":
        return (f"{clock(change.time)} raised  {change.severity.upper()} {change.id}{where}: {change.title}"
                + (f" — {change.figure}" if change.figure else ""))
    held = "" if change.held_s is None else f" after {change.held_s:.0f} s"
    return (f"{clock(change.time)} cleared {change.id}{where}{held}"
            + (f"; at its worst: {change.figure}" if change.figure else ""))
