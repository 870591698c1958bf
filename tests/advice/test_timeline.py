"""What changed, when: each finding raised and cleared, with times and its worst figure, a line per change,
bounded; told by the session from the findings of each tick."""

from __future__ import annotations

import time

import pytest

from hwtop.advice.timeline import Timeline, describe
from hwtop.demo.story import STARVED_FIX_S
from hwtop.model.finding import Finding
from tests.advice_timeline import play_story
from tests.factories import T0


@pytest.mark.slow  # a whole machine for 55 ticks: ~2 s
def test_the_starved_story_leaves_its_raise_and_its_clear_with_times(utc) -> None:
    frames = play_story("starved", 100)
    changes = [c for c in frames[-1].timeline if c.id == "gpu-starved"]
    assert [c.what for c in changes] == ["raised", "cleared"]
    raised, cleared = changes
    assert T0 < raised.time < T0 + STARVED_FIX_S < cleared.time
    assert raised.title == "Training waits on data loading" and "waits for its next batch" in raised.figure
    assert cleared.held_s == pytest.approx(cleared.time - raised.time)
    shown = [describe(c) for c in changes]
    assert shown[0].startswith(time.strftime("%H:%M:%S raised  WARNING gpu-starved · job: Training waits",
                                             time.gmtime(raised.time)))
    assert shown[1].startswith(time.strftime("%H:%M:%S cleared gpu-starved · job after ", time.gmtime(cleared.time)))
    assert "at its worst: the training step waits for its next batch" in shown[1]


def finding(wait: float, scope: str = "job") -> Finding:
    return Finding("gpu-starved", "warning", "Training waits", (f"waits {wait:.0f}%",), ("more workers",),
                   scope=scope, measure=wait)


def test_a_cleared_finding_names_its_worst_figure_not_its_last() -> None:
    timeline = Timeline()
    for now, wait in enumerate((40, 80, 55)):
        timeline.update(float(now), [finding(wait)])
    (raised, cleared) = timeline.update(3.0, [])
    assert (raised.time, raised.figure) == (0.0, "waits 40%")
    assert (cleared.time, cleared.figure, cleared.held_s) == (3.0, "waits 80%", 3.0)


def test_the_timeline_is_bounded_in_lines_and_in_time() -> None:
    timeline = Timeline(keep_s=100.0, max_changes=10)
    for now in range(0, 400, 2):  # a finding that flickers: raised, cleared, raised…
        timeline.update(float(now), [finding(50)] if now % 4 == 0 else [])
    assert len(timeline.changes) == 10 and timeline.changes[-1].time == 398.0
    sparse = Timeline(keep_s=100.0, max_changes=1000)
    for now in range(0, 400, 20):
        sparse.update(float(now), [finding(50)] if now % 40 == 0 else [])
    assert min(c.time for c in sparse.changes) >= 380 - 100


def test_time_going_back_starts_the_story_again() -> None:
    timeline = Timeline()
    timeline.update(10.0, [finding(50)])
    assert [c.what for c in timeline.update(5.0, [])] == []


def test_a_line_quotes_at_most_a_hundred_characters_of_its_figure() -> None:
    timeline = Timeline()
    (raised,) = timeline.update(0.0, [Finding("gpu-starved", "warning", "Training waits", ("x" * 500,), ("f",))])
    assert raised.figure == "x" * 500  # kept whole: doctor's JSON and a recording have all of it
    assert describe(raised).endswith(" — " + "x" * 99 + "…")


def test_a_timeline_that_keeps_what_it_showed_has_every_finding_with_its_first_and_last_time() -> None:
    """doctor's report: each finding shown over a watch, as last shown, cleared ones too; a plain timeline keeps
    none (the monitor's runs for hours)."""
    kept, plain = Timeline(keep_shown=True), Timeline()
    for now, findings in enumerate(((finding(40),), (finding(80), finding(60, "pid 7")), (finding(60, "pid 7"),))):
        kept.update(T0 + now, findings)
        plain.update(T0 + now, findings)
    job, pid = kept.shown[("gpu-starved", "job")], kept.shown[("gpu-starved", "pid 7")]
    assert (job.first, job.last, job.active, job.finding.measure) == (T0, T0 + 1, False, 80)
    assert (pid.first, pid.last, pid.active) == (T0 + 1, T0 + 2, True)
    assert plain.shown == {}
