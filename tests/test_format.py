"""The text helpers every widget draws with: any series, any scale, never an exception."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from hwtop.widgets.format import SPARK, sparkline


def test_an_all_zero_series_scaled_by_its_own_maximum_is_flat():
    assert sparkline((0.0, 0.0), 4, high=max((0.0, 0.0))).plain == "  " + SPARK[0] * 2


@given(st.lists(st.floats(min_value=-1e12, max_value=1e12), max_size=50), st.integers(0, 40),
       st.floats(min_value=-1e6, max_value=1e6))
def test_sparkline_is_always_width_cells_of_the_ramp(values, width, high):
    line = sparkline(values, width, high=high).plain
    assert len(line) == width
    assert set(line) <= set(SPARK) | {" "}
