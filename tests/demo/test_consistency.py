"""Every demo profile in every story tells one story: at ticks through the whole story, a snapshot's figures agree
with each other and with the findings raised on them (tests/demo/consistency.py lists what is checked). A story
or profile added later is checked by the same test. This machine's live snapshot passes the same checks."""

from __future__ import annotations

import pytest

from hwtop.demo.profiles import PROFILES
from hwtop.demo.story import NCCL_STUCK_RANK, RANK_PID, STARVED_BEFORE, STORIES
from hwtop.demo.variants import VARIANTS
from hwtop.model.frame import Frame
from hwtop.session.sampler import Sampler
from hwtop.session.session import Session
from tests.demo.consistency import contradictions
from tests.demo.played import EPOCH
from tests.demo.played import play as played
from tests.matrix import fast_few

STEADY_S = 60.0


def play(profile: str, story: str | None, step: float) -> list[Frame]:
    """The whole story (a minute of the steady job), a tick every `step` seconds of its clock."""
    return played(story, STORIES[story].duration_s if story else STEADY_S, profile, step, seed=3)


def _check(frames: list[Frame]) -> None:
    found = {f"t={f.snapshot.time - EPOCH:.0f}s: {line}" for f in frames for line in contradictions(f)}
    assert not found, "\n".join(sorted(found))


@pytest.mark.parametrize(("profile", "story"), fast_few(
    [(profile, story) for profile in PROFILES for story in (None, *STORIES)],
    lambda case: case[0] == "dgx-a100" or case[1] is None, arguments=2))  # every story on the box they are written for
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_every_profile_in_every_story_agrees_with_itself(profile: str, story: str | None) -> None:
    # the eight-GPU box the stories are written for, closely; the others at a coarser pace (the same checks)
    _check(play(profile, story, 4.0 if profile == "dgx-a100" else 9.0))


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_every_driver_and_fleet_variant_agrees_with_itself(variant: str) -> None:
    _check(play(f"h200:{variant}", None, 7.0))


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_the_hung_rank_is_alone_on_the_cpu_in_the_table_and_in_the_finding() -> None:
    frames = play("dgx-a100", "nccl-hang", 3.0)
    _check(frames)
    last = frames[-1]
    finding = next(f for f in last.findings if f.id == "collective-hang")
    stuck = RANK_PID + NCCL_STUCK_RANK
    assert any(f"pid {stuck}) is running on the CPU" in line for line in finding.evidence), finding.evidence
    ranks = {p.pid: p for p in last.snapshot.processes if RANK_PID <= p.pid < RANK_PID + 8}
    assert [pid for pid, p in ranks.items() if p.state == "R"] == [stuck]
    assert all((p.cpu_percent or 0) < 5 for pid, p in ranks.items() if pid != stuck)


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_the_starved_job_trains_no_faster_than_its_one_worker_supplies() -> None:
    frames = play("dgx-a100", "starved", 3.0)
    before = frames[10].snapshot.workload  # t = 30 s, num_workers=1
    assert before is not None and before.status == "running"
    assert before is not None and before.config is not None and before.config.num_workers == 1
    supply = 1000.0 / STARVED_BEFORE.cpu_ms_per_sample
    assert all(r.samples_per_s is not None and r.samples_per_s <= supply * 1.001 for r in before.ranks)
    finding = next(f for f in frames[19].findings if f.id == "gpu-starved")  # t = 57 s, before the fix
    line = next(line for line in finding.evidence if "num_workers=1" in line)
    assert f"make at most {supply:.0f} samples/s per rank" in line
    fix = " ".join(finding.fix)
    assert "256 logical CPUs on 128 cores" in fix and "256 cores" not in fix


def test_this_machines_live_snapshot_agrees_with_itself() -> None:
    import time

    session = Session(Sampler())
    try:
        session.tick()
        time.sleep(0.3)
        frame = session.tick()
    finally:
        session.close()
    assert frame.snapshot.memory is not None and frame.snapshot.numa is not None
    assert not contradictions(frame, live=True)
