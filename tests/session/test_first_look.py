"""The monitor's first frame is a tick without advice (no rule imported yet): the next tick advises that snapshot
before its own, so from the second frame on a session shows what one that advised every tick shows."""

from __future__ import annotations

import pytest

from hwtop.model.frame import Frame
from hwtop.session.session import Session
from tests.factories import SequenceSource
from tests.tui.screens import story_snapshots


def _advice(frame: Frame) -> tuple[object, ...]:
    return frame.findings, frame.rule_errors, frame.timeline


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_a_first_tick_without_advice_changes_no_later_frame() -> None:
    snapshots = story_snapshots("dgx-a100:starved", seconds=12.0, step=1.0)  # gpu-starved holds from the 6th tick
    every = Session(SequenceSource(snapshots))
    advised = [every.tick() for _ in snapshots]
    assert any(frame.findings for frame in advised[1:])  # something to get wrong
    late = Session(SequenceSource(snapshots))
    first = late.tick(advise=False)
    assert not first.advised and first.findings == () and first.snapshot == advised[0].snapshot
    rest = [late.tick() for _ in snapshots[1:]]
    assert all(frame.advised for frame in rest)
    assert [_advice(frame) for frame in rest] == [_advice(frame) for frame in advised[1:]]
