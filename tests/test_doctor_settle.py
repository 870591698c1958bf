"""doctor's report ends on what the whole watch's stack samples say. While it watches, the rules read the chunks
of samples that have ended (in a 15 s watch often only the first 3 s after attaching); the chunk still running
is read when sampling stops, and the rules are asked once more with it (cli.doctor.settle)."""

from __future__ import annotations

import dataclasses

from hwtop.advice.engine import AdviceEngine
from hwtop.advice.thresholds import Thresholds
from hwtop.cli.doctor import run_doctor
from hwtop.model.snapshot import RankStacks, Snapshot
from tests.advice_timeline import Timeline
from tests.test_diagnose_rules import BALANCED, stacks


class FirstChunkStarved:
    """A sampler over a job whose first chunk of stack samples waited for data 72% of the time; the samples read
    when sampling stops (`finish_stacks`) say `whole_watch`."""

    workload = None

    def __init__(self, whole_watch: float | None) -> None:
        self.timeline = Timeline(cores=2)
        self.first_chunk = dataclasses.replace(BALANCED, stacks=(stacks(data=0.72, samples=29),))
        final = () if whole_watch is None else (stacks(data=whole_watch, samples=150),)
        self.job = _Job(final)

    def sample(self) -> Snapshot:
        return self.timeline.tick(job=self.first_chunk)  # one second of snapshot time per tick

    def close(self) -> None:
        pass


@dataclasses.dataclass
class _Job:
    final: tuple[RankStacks, ...]

    def finish_stacks(self) -> tuple[RankStacks, ...] | None:
        return self.final or None


def watch(whole_watch: float | None):
    seen, facts = run_doctor(FirstChunkStarved(whole_watch), Thresholds(), 0.2, 0.005, None)
    starved = [entry for key, entry in seen.items() if key[0] == "data-starved"]
    assert len(starved) == 1, seen  # shown during the watch, from the first chunk
    return starved[0], facts


def test_a_finding_the_whole_watch_contradicts_is_cleared() -> None:
    entry, facts = watch(whole_watch=0.05)
    assert not entry.active
    assert "72% of 29 stack samples" in entry.finding.evidence[0]  # what was shown, as it was shown
    assert facts["job"]["stacks"][0]["samples"] == 150  # and the report's job part has the whole watch


def test_a_finding_the_whole_watch_supports_carries_its_figures() -> None:
    entry, _ = watch(whole_watch=0.6)
    assert entry.active
    assert entry.finding.evidence[0].startswith("pid 4100: main thread waiting for data in 60% of 150 stack samples")
    assert entry.finding.since is not None and entry.first <= entry.last


def test_without_more_samples_the_watch_stands() -> None:
    entry, _ = watch(whole_watch=None)
    assert entry.active and "72% of 29 stack samples" in entry.finding.evidence[0]


def test_holding_asks_the_rules_without_touching_what_is_tracked() -> None:
    engine, timeline = AdviceEngine(), Timeline(cores=2)
    starved = dataclasses.replace(BALANCED, stacks=(stacks(data=0.72),))
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
    assert entry.active and "72% of 29 stack samples" in entry.finding.evidence[0]
