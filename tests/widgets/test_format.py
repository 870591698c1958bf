"""The text helpers every widget draws with: any series, any scale, never an exception."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hwtop.widgets.format import SPARK, human_bytes, human_rate, sparkline


def test_an_all_zero_series_scaled_by_its_own_maximum_is_flat():
    assert sparkline((0.0, 0.0), 4, high=max((0.0, 0.0))).plain == "  " + SPARK[0] * 2


@given(st.lists(st.floats(min_value=-1e12, max_value=1e12), max_size=50), st.integers(0, 40),
       st.floats(min_value=-1e6, max_value=1e6))
def test_sparkline_is_always_width_cells_of_the_ramp(values, width, high):
    line = sparkline(values, width, high=high).plain
    assert len(line) == width
    assert set(line) <= set(SPARK) | {" "}


@pytest.mark.parametrize(("value", "shown"), [(None, "N/A"), (0, "0B/s"), (999.4, "999B/s"), (999.6, "1.0kB/s"),
                                              (12_345, "12.3kB/s"), (999.96e3, "1.0MB/s"), (1.2e9, "1.2GB/s"),
                                              (31.5e9, "31.5GB/s")])
def test_rates_are_si_and_carry_their_unit(value, shown):
    """The units rule: a rate is decimal (PCIe Gen4 x16 is 31.5 GB/s as the spec says) and always ends in B/s."""
    assert human_rate(value) == shown


@pytest.mark.parametrize(("value", "shown"), [(None, "N/A"), (999.4, "999B"), (1023.6, "1.0K"),
                                              (1020 * 2**10, "1.0M"), (999.9 * 2**10, "999.9K"),
                                              (80 * 2**30, "80.0G"), (1023.96 * 2**20, "1.0G"), (1.5 * 2**40, "1.5T")])
def test_memory_is_binary_with_the_letter_alone(value, shown):
    """The units rule: memory counts 1024s, as nvidia-smi and free do (an 80 GiB card reads 80.0G)."""
    assert human_bytes(value) == shown


@given(st.floats(min_value=0, max_value=1e18, allow_nan=False))
@settings(max_examples=50)
def test_a_rate_never_shows_four_integer_digits(value):
    number = human_rate(value).removesuffix("B/s").rstrip("kMGT")
    assert float(number) < 1000 or human_rate(value).endswith("TB/s")


@given(st.floats(min_value=0, max_value=1e18, allow_nan=False))
@settings(max_examples=50)
def test_memory_never_shows_four_integer_digits(value):
    """An RSS of 1020 KiB reads 1.0M, never 1020.0K: the column keeps its width and the figure its scale."""
    number = human_bytes(value).rstrip("BKMGTP")
    assert float(number) < 1000 or human_bytes(value).endswith("P")
