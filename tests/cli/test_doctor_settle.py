"""doctor's report ends on what the whole watch's stack samples say. While it watches, the rules read the chunks
of samples that have ended (in a 15 s watch often only the first 3 s after attaching); the chunk still running
is read when sampling stops, and the rules are asked once more with it (cli.doctor.settle)."""

from __future__ import annotations

import dataclasses

from msgspec.structs import replace

from hwtop.advice.engine import AdviceEngine
from hwtop.advice.thresholds import Thresholds
from hwtop.cli.doctor import run_doctor
from hwtop.model.history import History
from hwtop.model.job import RankStacks
from hwtop.model.snapshot import Snapshot
from tests.advice.test_job_rules import BALANCED, stacks
from tests.advice_timeline import Timeline


class FirstChunkStarved:
    """A sampler over a job whose first chunk of stack samples waited for data 72% of the time; the samples read
    when sampling stops (`finish_stacks`) say `whole_watch`. Each tick is `step_s` of snapshot time."""

    workload = None

    def __init__(self, whole_watch: float | None, step_s: float) -> None:
        self.timeline, self.step_s = Timeline(cores=2), step_s
        self.history = History()  # a snapshot source's (session.SnapshotSource): the Frame carries it
        self.first_chunk = replace(BALANCED, stacks=(stacks(data=0.72, samples=29),))
        final = () if whole_watch is None else (stacks(data=whole_watch, samples=150),)
        self.job = _Job(final)

    def sample(self) -> Snapshot:
        return self.timeline.tick(self.step_s, job=self.first_chunk)

    def close(self) -> None:
        pass


@dataclasses.dataclass
class _Job:
    final: tuple[RankStacks, ...]

    def finish_stacks(self) -> tuple[RankStacks, ...] | None:
        return self.final or None


SHORT_S, LONG_S = 0.4, 3.0  # snapshot time per tick: 0.3 s of ticks every 5 ms span ~8-24 s, or ~60-180 s


def watch(whole_watch: float | None, step_s: float = SHORT_S):
    """doctor's watch; the data-starved entry it reports (None when there is none) and its facts."""
    seen, facts = run_doctor(FirstChunkStarved(whole_watch, step_s), Thresholds(), 0.3, 0.005, None)
    starved = [entry for key, entry in seen.items() if key[0] == "data-starved"]
    assert len(starved) <= 1, seen
    return (starved[0] if starved else None), facts


def test_a_finding_the_samples_of_the_whole_watch_contradict_is_dropped() -> None:
    entry, facts = watch(whole_watch=0.05)
    assert entry is None  # shown from the first 3 s of samples, which are among the 150: it never held
    assert facts["job"]["stacks"][0]["samples"] == 150  # the report's job part has them all


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
        if snapshot.job is not None and snapshot.job.stacks[0].samples == 150:  # the whole watch's samples
            return tuple(f for f in found if f.id != "data-starved"), failed | {"data-starved"}
        return found, failed

    monkeypatch.setattr(engine_module.AdviceEngine, "holding", breaking)
    entry, _ = watch(whole_watch=0.05)
    assert entry is not None and entry.active and "72% of 29 stack samples" in entry.finding.evidence[0]
