"""Runs the rules over a bounded window of snapshots each tick and applies hysteresis, so a finding appears
after its condition has held for the rule's hold time and clears after it has been false for its clear time.
Time is the snapshots' own, so a replay advises exactly as the live run did. Each member of a cause (one GPU of
eight) holds and clears on its own; what is shown is grouped, one finding per cause (advice/grouping.py)."""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

import msgspec
import msgspec.structs

from hwtop.advice.grouping import group
from hwtop.advice.rank_window import window_verdicts
from hwtop.advice.rules import RULES, THRESHOLDS, Rule
from hwtop.advice.thresholds import Thresholds
from hwtop.advice.window import Window
from hwtop.model.finding import Finding
from hwtop.model.snapshot import Snapshot

if TYPE_CHECKING:  # a job's model loads only with a job (tests/hwtop/test_import_hygiene.py)
    from hwtop.model.verdict import Verdicts

WINDOW_S = 120.0  # the past the rules may look at
SPACING_S = 0.5  # at a faster refresh, the window keeps one snapshot per half second (the latest always)
MAX_SNAPSHOTS = int(WINDOW_S / SPACING_S) + 2  # bounds memory whatever the refresh


class _Track(msgspec.Struct):
    first_true: float
    last_true: float
    finding: Finding
    shown: bool = False


class AdviceEngine:
    def __init__(self, thresholds: Thresholds | None = None, rules: tuple[Rule, ...] = RULES) -> None:
        self.thresholds = thresholds or Thresholds()
        self.rules = rules
        known = {*THRESHOLDS, *(name for rule in rules for name in rule.thresholds)}
        unknown = sorted(self.thresholds.values.keys() - known)
        if unknown:  # a config file's schema refuses it first, with the line that says so
            raise ValueError(f"unknown advice threshold {unknown[0]!r}")
        self._snapshots: deque[Snapshot] = deque(maxlen=MAX_SNAPSHOTS)
        self._tracks: dict[tuple[str, str], _Track] = {}
        self.findings: tuple[Finding, ...] = ()
        self.verdicts: Verdicts | None = None  # the ranks' verdicts the rules read at the last update
        self.rule_errors: dict[str, str] = {}  # a rule that raised: named in the pane, never a crash

    @property
    def watching(self) -> tuple[str, ...]:
        return tuple(rule.watches for rule in self.rules)

    def reset(self) -> None:
        self._snapshots.clear()
        self._tracks.clear()
        self.findings = ()
        self.verdicts = None

    def update(self, snapshot: Snapshot) -> tuple[Finding, ...]:
        if self._snapshots and snapshot.time < self._snapshots[-1].time:
            self.reset()  # time went backwards (a replay seeked): the past no longer applies
        if len(self._snapshots) >= 2 and snapshot.time - self._snapshots[-2].time < SPACING_S:
            self._snapshots[-1] = snapshot  # thinned: the newest replaces one that was too close to its elder
        else:
            self._snapshots.append(snapshot)
        now = snapshot.time
        while self._snapshots[0].time < now - WINDOW_S:
            self._snapshots.popleft()
        window = Window(tuple(self._snapshots))
        seen: set[tuple[str, str]] = set()
        clear_of: dict[str, float] = {}
        for rule in self.rules:
            hold = self.thresholds.hold_s.get(rule.id, rule.hold_s)
            clear_of[rule.id] = rule.clear_s
            try:
                found = list(rule(window, self.thresholds))
            except Exception as error:  # noqa: BLE001 - one broken rule must not stop the others or the app
                self.rule_errors[rule.id] = f"{type(error).__name__}: {error}"
                continue
            self.rule_errors.pop(rule.id, None)
            for finding in found:
                key = (finding.id, finding.scope)  # each member of a cause holds and clears on its own
                seen.add(key)
                track = self._tracks.get(key)
                if track is None:
                    track = self._tracks[key] = _Track(now, now, finding)
                track.last_true, track.finding = now, finding
                if now - track.first_true >= hold:
                    track.shown = True
        for key, track in list(self._tracks.items()):
            if key not in seen and (not track.shown or now - track.last_true >= clear_of.get(key[0], 0.0)):
                del self._tracks[key]
        self.findings = group((msgspec.structs.replace(t.finding, since=t.first_true, held_at=t.last_true)
                               for t in self._tracks.values() if t.shown), now)
        self.verdicts = self._verdicts(window)
        return self.findings

    def _verdicts(self, window: Window) -> Verdicts | None:
        """The ranks' verdicts as the rules read them this tick: kept per snapshot (advice/rank_window.py), so this
        is the answer they were given, not a second judgement. None where judging raised: the rules that read it
        raised the same and are named in the pane (rule_errors)."""
        try:
            return window_verdicts(window, self.thresholds)
        except Exception:  # noqa: BLE001 - the rules that read the verdicts name the error; the tick goes on
            return None

    def holding(self, snapshot: Snapshot) -> tuple[tuple[Finding, ...], frozenset[str]]:
        """What the rules find with `snapshot` in place of the latest, without hold or clear times and without
        changing what is tracked; and the rules that raised, which found nothing either way. For a report that
        asks once more at its end (doctor, with the stack samples that only came in when sampling stopped)."""
        past = tuple(s for s in self._snapshots if s.time < snapshot.time)
        window = Window((*past, snapshot))
        found: list[Finding] = []
        failed: set[str] = set()
        for rule in self.rules:
            try:
                found += rule(window, self.thresholds)
            except Exception:  # noqa: BLE001 - one broken rule must not stop the others
                failed.add(rule.id)
        return group(found, snapshot.time), frozenset(failed)
