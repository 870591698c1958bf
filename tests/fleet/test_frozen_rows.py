"""Rows are values: reading the fleet's state again must not change it. Two exporters that report the same GPUs
are one row with one "also read from" note, however often the rows are read (issue 43: three reads gave three
copies of the note, the twin's row being changed in place)."""

from __future__ import annotations

from hwtop.fleet.model import GpuRow, HostView
from hwtop.fleet.sources import DirectSource


def _twin(url: str, timeout: float) -> HostView:
    return HostView(url, "n1", (GpuRow("0", "H100", "GPU-1", 50.0),), hwtop=True)


def test_reading_the_rows_three_times_gives_one_note() -> None:
    source = DirectSource(["http://a:9400/metrics", "http://n1.example:9400/metrics"], fetcher=_twin)
    try:
        while not all(t.future is not None and t.future.done() for t in source._targets):
            source.poll()
        source.poll()
        notes = [tuple(view.notes) for _ in range(3) for view in source.hosts()]
    finally:
        source.close()
    assert notes == [("also read from http://n1.example:9400/metrics",)] * 3
