"""A panel whose lines were compared row by row (each one row at its laid-out width) takes their count as its
height, without measuring every line again (issue 46: a 256-rank job table measured twice a tick); a wrapped or
added line still asks for a layout pass."""

from __future__ import annotations

import pytest
from rich.text import Text

from tests.widgets.test_strips import Lines, _laid_out


def test_rows_compared_one_by_one_are_not_measured_again(monkeypatch: pytest.MonkeyPatch) -> None:
    panel = Lines([f"rank {r} 12%" for r in range(256)])
    calls = _laid_out(panel, 40)
    measured: list[int] = []
    monkeypatch.setattr(Lines, "_row_count", lambda self, width: measured.append(width) or 256)
    panel.text = [f"rank {r} {'13' if r == 7 else '12'}%" for r in range(256)]
    panel.changed()
    assert measured == [] and calls[-1][1] is False and len(calls[-1][0]) == 1


def test_a_line_that_now_wraps_is_measured_and_laid_out() -> None:
    panel = Lines(["a", "b"])
    calls = _laid_out(panel, 10)
    panel.text = ["a", "b" * 15]
    panel.changed()
    assert calls[-1] == ((), True)
    assert [line.plain for line in panel.cached_lines(10)] == ["a", "b" * 15]
    assert isinstance(panel.cached_lines(10)[1], Text)
