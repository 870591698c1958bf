"""Rows are values: reading the fleet again must not change what was read before. Two exporters that report the
same GPUs are one row with one "also read from" note, however many rounds are read (issue 43: three reads gave
three copies of the note, the twin's row being changed in place)."""

from __future__ import annotations

from hwtop.fleet.model import GpuRow, HostView
from hwtop.fleet.session import FleetSession
from hwtop.fleet.sources import DirectSource


def _twin(url: str, timeout: float) -> HostView:
    return HostView(url, "n1", (GpuRow("0", "H100", "GPU-1", 50.0),), hwtop=True)


def test_three_rounds_give_one_note_each_and_leave_earlier_frames_as_they_were() -> None:
    session = FleetSession(DirectSource(["http://a:9400/metrics", "http://n1.example:9400/metrics"], fetcher=_twin))
    try:
        frames = [session.round() for _ in range(3)]
    finally:
        session.close()
    assert [[view.notes for view in frame.hosts] for frame in frames] == \
        [[("also read from http://n1.example:9400/metrics",)]] * 3
