"""One voice: each tick's Frame carries every rank's verdict, the very answer the rules read that tick (not a
second judgement), so the job view and the exporter say what the findings say. None where no running job of two
ranks or more is focused, and on the monitor's first frame, which the rules have not seen."""

from __future__ import annotations

import pytest

from hwtop.advice.rules import collective
from hwtop.model.frame import Frame
from hwtop.session.session import Session
from tests.demo.played import EPOCH, play, played
from tests.factories import ScriptedSource, host_snapshot

HUNG = 5  # the nccl-hang story's rank that never launches the collective (hwtop.demo.story NCCL_STUCK_RANK)


def at(frames: tuple[Frame, ...], first: float, last: float) -> list[Frame]:
    return [f for f in frames if first <= f.time - EPOCH <= last]


def test_the_frame_names_the_hung_rank_as_the_collective_hang_finding_does() -> None:
    frames = at(played("nccl-hang", 70.0), 60.0, 70.0)
    assert len(frames) == 6
    for frame in frames:
        assert frame.verdicts is not None
        hung = frame.verdicts.of(HUNG)
        assert hung is not None and (hung.state, hung.blamed) == ("before-collective", True)
        assert [v.rank for v in frame.verdicts.blamed] == [HUNG]
        here = [r.rank for r in frame.snapshot.job.ranks if not r.nccl_only] if frame.snapshot.job else []
        assert {v.state for v in frame.verdicts.ranks if v.rank != HUNG and v.rank in here} == {"inside-collective"}
        (hang,) = [f for f in frame.findings if f.id == "collective-hang"]
        assert hang.title.startswith(f"Rank {HUNG} never reached the collective")


def test_before_the_hang_the_frame_says_slow_as_the_straggler_finding_does() -> None:
    """At 36-38 s the story's rank 5 is still moving: the rules say straggler, and so does the frame (the
    exporter's own judgement of the snapshot alone said before-collective here)."""
    for frame in at(played("nccl-hang", 70.0), 36.0, 38.0):
        assert frame.verdicts is not None
        slow = frame.verdicts.of(HUNG)
        assert slow is not None and (slow.state, slow.blamed) == ("slow", True)
        (straggler,) = [f for f in frame.findings if f.id == "rank-straggler"]
        assert f"Rank {HUNG}" in straggler.title


def test_the_frame_holds_the_very_answer_the_collective_rule_read(monkeypatch: pytest.MonkeyPatch) -> None:
    read = []

    def spy(window, t):  # noqa: ANN001, ANN202 - the rule's own call, passed through
        read.append(answer := judged(window, t))
        return answer

    judged = collective.window_verdicts
    monkeypatch.setattr(collective, "window_verdicts", spy)
    frames = play("nccl-hang", 64.0, step=8.0)
    assert len(read) == len(frames) == 9
    assert all(frame.verdicts is answer for frame, answer in zip(frames, read, strict=True))
    assert frames[-1].verdicts is not None and frames[-1].verdicts.of(HUNG) is not None


def test_no_job_no_verdicts_and_none_before_the_rules_ran() -> None:
    session = Session(ScriptedSource([host_snapshot()]))
    assert session.tick(advise=False).verdicts is None
    assert session.tick().verdicts is None
