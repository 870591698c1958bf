"""doctor's findings: those the rules showed while it watched (tracked by advice/timeline.py, cleared ones too),
settled at the end with what the whole watch's stack samples say."""

from __future__ import annotations

from collections.abc import Mapping

import msgspec
import msgspec.structs

from hwtop.advice.engine import AdviceEngine
from hwtop.advice.timeline import Shown
from hwtop.model.finding import Finding
from hwtop.model.job import RankStacks
from hwtop.model.snapshot import Snapshot

Key = tuple[str, str]


class Reported(msgspec.Struct, frozen=True):
    """A finding as the report gives it: as last shown (or as the whole watch's samples show it), when first and
    last shown, and whether it still was at the end."""

    finding: Finding
    first: float
    last: float
    active: bool = True

    def order(self) -> tuple[int, str, str]:
        """Worst first, then by rule and scope."""
        return (self.finding.severity_order, self.finding.id, self.finding.scope)


def reported(shown: Mapping[Key, Shown]) -> dict[Key, Reported]:
    return {key: Reported(s.finding, s.first, s.last, s.active) for key, s in shown.items()}


def with_samples(snapshot: Snapshot, stacks: tuple[RankStacks, ...]) -> Snapshot:
    """`snapshot` with other stack samples in its job (and the ranks' figures read from them)."""
    from hwtop.probes.job import with_stacks

    job = snapshot.job
    if job is None:
        return snapshot
    return msgspec.structs.replace(snapshot, job=msgspec.structs.replace(
        job, stacks=stacks, ranks=with_stacks(job.ranks, stacks)))


def settle(shown: Mapping[Key, Shown], samples: Mapping[Key, tuple[RankStacks, ...]], engine: AdviceEngine,
           last: Snapshot, whole: Snapshot, covers_the_watch: bool) -> dict[Key, Reported]:
    """The report ends on what the stack samples of the watch say. While doctor watches, the rules read the
    chunks of samples that have ended: in a 15 s watch, often only the first 3 s after attaching (a job's warm-up
    among them). With the chunks still running read at the end (`whole`), the rules are asked once more. A finding
    they support carries their figures. One they contradict (found with the last chunks, or with the samples it
    last held with, `samples`, not with the whole watch's) is dropped when they cover the whole watch (the samples
    it was shown from are among them: it never held over the watch) and cleared otherwise (a long watch: it held
    earlier). Findings whose answer the samples do not change keep what the watch showed. A finding only
    they show is added when its rule's hold time is within the span of those samples: a hang speaks on one look
    (on a loaded box the chunk that completes a stuck thread's 10 s of stillness may be the one still running
    when the watch ends), and a share over the whole span is met by some stretch of it as long as the hold (a
    loop that computes in 3% of its samples showed one in the 128 of its second chunk, and work-in-loop's "it
    is training" was not met until its second chunk, 4.8 s before the watch ended). It is added whether or not
    the last look showed it too, as long as a look without samples does not: a rule that does not read them
    keeps its hold."""
    found_before, _ = engine.holding(last)
    found_after, failed = engine.holding(whole)
    before, after = {f.key for f in found_before}, {f.key: f for f in found_after}
    out: dict[Key, Reported] = {}
    for key, entry in shown.items():
        kept = Reported(entry.finding, entry.first, entry.last, entry.active)
        if not entry.active or key[0] in failed and key not in after:
            out[key] = kept  # cleared while watched: that stands; a rule that raised contradicts nothing
        elif key in after:
            out[key] = msgspec.structs.replace(
                kept, finding=msgspec.structs.replace(after[key], since=entry.finding.since))
        elif key in before or _shown_by(engine, last, entry.finding, samples.get(key, ())):
            if not covers_the_watch:
                out[key] = msgspec.structs.replace(kept, active=False)
        else:
            out[key] = kept
    held = _holding_within(engine, whole)
    bare, _ = engine.holding(with_samples(last, ()))
    made_by_samples = set(after) - {f.key for f in bare}  # what a look without them does not find
    for key, finding in after.items():
        if key not in shown and key[0] in held and (key not in before or key in made_by_samples):
            out[key] = Reported(msgspec.structs.replace(finding, since=whole.time), whole.time, whole.time)
    return out


def _holding_within(engine: AdviceEngine, whole: Snapshot) -> set[str]:
    """The rules whose hold time is within the span of the whole watch's samples."""
    span = max((s.window_s for s in whole.job.stacks), default=0.0) if whole.job is not None else 0.0
    return {r.id for r in engine.rules if engine.thresholds.hold_s.get(r.id, r.hold_s) <= span}


def _shown_by(engine: AdviceEngine, last: Snapshot, finding: Finding, samples: tuple[RankStacks, ...]) -> bool:
    """Whether the rules find `finding` at the end given the samples it last held with: then those samples made
    it, and the whole watch's (which include them) unmake it. Without, it is the other figures that moved."""
    if not samples or last.job is None or samples == last.job.stacks:
        return False
    found, _ = engine.holding(with_samples(last, samples))
    return any(f.key == finding.key for f in found)
