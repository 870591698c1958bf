"""doctor's report ends on what the whole watch's stack samples say. While it watches, the rules read the chunks
of samples that have ended (in a 15 s watch often only the first 3 s after attaching); the chunk still running
is read when sampling stops, and the rules are asked once more with it (cli.doctor.settle)."""

from __future__ import annotations

import dataclasses

import pytest
from msgspec.structs import replace

import hwtop.cli.doctor.watch as watch_module
from hwtop.advice.engine import AdviceEngine
from hwtop.advice.thresholds import Thresholds
from hwtop.cli.doctor import run_doctor
from hwtop.model.history import History
from hwtop.model.job import JobSnapshot, RankStacks, Stillness
from hwtop.model.snapshot import Snapshot
from hwtop.session.session import Session
from tests.advice.test_job_rules import BALANCED, stacks
from tests.advice_timeline import Timeline


class FirstChunkStarved:
    """A sampler over a job whose first chunk of stack samples waited for data 72% of the time; the samples read
    when sampling stops (`finish_stacks`) say `whole_watch`. Each tick is `step_s` of snapshot time."""

    workload = None

    def __init__(self, whole_watch: float | None, step_s: float, first: RankStacks | None = None,
                 final: RankStacks | None = None) -> None:
        self.timeline, self.step_s = Timeline(cores=2), step_s
        self.history = History()  # a snapshot source's (session.SnapshotSource): the Frame carries it
        self.first_chunk = replace(BALANCED, stacks=(first or stacks(data=0.72, samples=29),))
        if final is None and whole_watch is not None:
            final = stacks(data=whole_watch, samples=150)
        self.job = _Job(() if final is None else (final,))
        self.later: JobSnapshot | None = None  # the job once its second chunk of samples has ended
        self.ticks = 0

    def sample(self) -> Snapshot:
        self.ticks += 1
        if self.later is None or self.ticks <= LATER_FROM:
            return self.timeline.tick(self.step_s, job=self.first_chunk)
        return self.timeline.tick(0.01, job=self.later)  # the rest of the watch, well within the clear time

    def finish_stacks(self) -> tuple[RankStacks, ...] | None:
        return self.job.finish_stacks()

    def close(self) -> None:
        pass


@dataclasses.dataclass
class _Job:
    final: tuple[RankStacks, ...]

    def finish_stacks(self) -> tuple[RankStacks, ...] | None:
        return self.final or None


LATER_FROM = 8  # ticks
SHORT_S, LONG_S = 0.4, 3.0  # snapshot time per tick: 40 ticks span 16 s, or 120 s


class WatchClock:
    """doctor's clock, moved by its own sleeps: a watch of 0.2 s at 5 ms is 40 ticks whatever the box's load
    (on the wall clock a loaded box fitted fewer ticks in, and the finding never held)."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def watched(source: FirstChunkStarved):
    """doctor's watch of `source` on WatchClock: (its findings by key, its facts)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(watch_module, "time", WatchClock())
        done = run_doctor(Session(source, Thresholds()), 0.2, 0.005, None)
    assert done is not None and done.facts.ticks == 41, done
    return {entry.finding.key: entry for entry in done.findings}, done.facts


def watch(whole_watch: float | None, step_s: float = SHORT_S, first: RankStacks | None = None):
    """doctor's watch; the data-starved entry it reports (None when there is none) and its facts."""
    seen, facts = watched(FirstChunkStarved(whole_watch, step_s, first))
    starved = [entry for key, entry in seen.items() if key[0] == "data-starved"]
    assert len(starved) <= 1, seen
    return (starved[0] if starved else None), facts


def test_a_finding_the_samples_of_the_whole_watch_contradict_is_dropped() -> None:
    entry, facts = watch(whole_watch=0.05)
    assert entry is None  # shown from the first 3 s of samples, which are among the 150: it never held
    assert facts.job is not None and facts.job.stacks[0].samples == 150  # the report's job part has them all


def test_after_a_long_watch_a_finding_the_last_samples_contradict_is_cleared() -> None:
    entry, _ = watch(whole_watch=0.05, step_s=LONG_S)  # longer than the samples kept: it held earlier
    assert entry is not None and not entry.active
    assert "72% of 29 stack samples" in entry.finding.evidence[0]  # what was shown, as it was shown


def test_a_finding_the_whole_watch_supports_carries_its_figures() -> None:
    entry, _ = watch(whole_watch=0.6)
    assert entry is not None and entry.active
    assert entry.finding.evidence[0].startswith("pid 4100: main thread waiting for data in 60% of 150 stack samples")
    assert entry.finding.since is not None and entry.first <= entry.last


def test_without_more_samples_the_watch_stands() -> None:
    entry, _ = watch(whole_watch=None)
    assert entry is not None and entry.active and "72% of 29 stack samples" in entry.finding.evidence[0]


def test_holding_asks_the_rules_without_touching_what_is_tracked() -> None:
    engine, timeline = AdviceEngine(), Timeline(cores=2)
    starved = replace(BALANCED, stacks=(stacks(data=0.72),))
    for _ in range(8):
        shown = engine.update(timeline.tick(job=starved))
    assert [f.id for f in shown] == ["data-starved"]
    latest = timeline.tick(seconds=0.0, job=BALANCED)  # the same moment, other stacks
    assert engine.holding(latest) == ((), frozenset())
    assert [f.id for f in engine.findings] == ["data-starved"]  # hysteresis untouched
    found, failed = engine.holding(timeline.tick(seconds=0.0, job=starved))
    assert [f.id for f in found] == ["data-starved"] and not failed


def test_a_rule_that_raises_on_the_last_samples_clears_nothing(monkeypatch) -> None:
    import hwtop.advice.engine as engine_module

    real = engine_module.AdviceEngine.holding

    def breaking(self, snapshot):
        found, failed = real(self, snapshot)
        if snapshot.job is not None and snapshot.job.stacks and snapshot.job.stacks[0].samples == 150:
            return tuple(f for f in found if f.id != "data-starved"), failed | {"data-starved"}
        return found, failed

    monkeypatch.setattr(engine_module.AdviceEngine, "holding", breaking)
    entry, _ = watch(whole_watch=0.05)
    assert entry is not None and entry.active and "72% of 29 stack samples" in entry.finding.evidence[0]


def still_main(seconds: float, samples: int) -> RankStacks:
    """A main thread blocked in a queue's join (no CPU) whose every sample so far showed that one stack."""
    return replace(stacks(data=0.0, samples=samples), main_running=0.0,
                   still=Stillness(seconds, samples, "threading.py:327 Condition.wait", "train.py:61 main"))


def test_a_hang_only_the_whole_watchs_samples_show_is_reported() -> None:
    """A loaded box: the first chunk (3 s) ended inside the watch, the one that makes 10 s still did not."""
    source = FirstChunkStarved(None, SHORT_S, first=still_main(3.0, 30), final=still_main(17.5, 170))
    seen, _ = watched(source)
    stuck = [entry for key, entry in seen.items() if key[0] == "loop-stuck"]
    assert len(stuck) == 1 and stuck[0].active, seen
    assert "has not moved for 18 s: all 170 stack samples at train.py:61 main" in stuck[0].finding.evidence[0]


def test_a_finding_that_must_hold_is_added_from_the_last_samples_only_when_they_span_its_hold() -> None:
    """data-starved holds 5 s before it is shown. The whole watch's samples over 30 s at 60%: some 5 s of them
    waited at least that much; over 3 s they cannot show a hold."""
    def final(window_s: float) -> FirstChunkStarved:
        return FirstChunkStarved(None, SHORT_S, first=stacks(data=0.05, samples=29),
                                 final=replace(stacks(data=0.6, samples=150), window_s=window_s))

    seen, _ = watched(final(30.0))
    starved = [entry for key, entry in seen.items() if key[0] == "data-starved"]
    assert len(starved) == 1 and starved[0].active and "60% of 150 stack samples" in starved[0].finding.evidence[0]
    seen, _ = watched(final(3.0))
    assert not [key for key in seen if key[0] == "data-starved"], seen


def test_a_finding_shown_too_late_to_hold_is_added_when_the_whole_watchs_samples_span_its_hold() -> None:
    """The first 3 s show no loop (5% waiting for data); the next chunk ends near the watch's end with 60%, too late
    for data-starved's 5 s hold; the whole watch's samples (30 s of them) say 60%: it held over some 5 s of them."""
    source = FirstChunkStarved(None, SHORT_S, first=stacks(data=0.05, samples=29), final=stacks(data=0.6, samples=190))
    source.later = replace(BALANCED, stacks=(stacks(data=0.6, samples=130),))
    seen, _ = watched(source)  # from the ninth tick, 0.01 s a tick: 0.3 s of the 5 s hold by the end
    starved = [entry for key, entry in seen.items() if key[0] == "data-starved"]
    assert len(starved) == 1 and starved[0].active and "60% of 190 stack samples" in starved[0].finding.evidence[0]


def test_a_finding_the_later_chunks_and_the_whole_watch_both_contradict_is_dropped() -> None:
    """Shown from the first 3 s (31% waiting for data, limit 30%); the next chunk brings the window to 12%, and the
    whole watch says 17%: it never held over the watch, though it is still shown (within its clear time)."""
    source = FirstChunkStarved(None, 1.0, first=stacks(data=0.31, samples=29), final=stacks(data=0.17, samples=190))
    source.later = replace(BALANCED, stacks=(stacks(data=0.12, samples=130),))
    seen, _ = watched(source)  # 41 ticks: the later chunk's from the ninth
    assert not [key for key in seen if key[0] == "data-starved"], seen
