"""/metrics writes each value as the figure it is: no float noise from the arithmetic that produced it."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from hwtop.exporter.text import number
from hwtop.model.frame import Frame
from tests.exporter.scrape import scrape_once
from tests.factories import demo_snapshots

SAMPLE = re.compile(r"^[A-Za-z_:][\w:]*(\{.*\})? (\S+)$")


def _significant_digits(text: str) -> int:
    mantissa = text.lower().split("e")[0].lstrip("-").replace(".", "").strip("0")
    return len(mantissa)


def test_a_scrape_of_a_gpm_card_carries_no_float_noise() -> None:
    frame = Frame(demo_snapshots("h200", count=3)[-1])  # GPM percentages become DCGM's 0-1 ratios: x / 100
    text = scrape_once(frame)
    values = [m.group(2) for line in text.splitlines() if (m := SAMPLE.match(line)) and not line.startswith("#")]
    ratios = [v for v in values if "." in v]
    assert ratios, text  # the card's GPM activity is there, as fractions
    assert all(_significant_digits(v) <= 15 for v in values), [v for v in values if _significant_digits(v) > 15]
    assert "DCGM_FI_PROF_SM_ACTIVE" in text


def test_a_ratio_computed_from_a_percentage_reads_as_written() -> None:
    assert number(72.44 / 100) == "0.7244"
    assert number(0.1 + 0.2) == "0.3"
    assert number(40960.0) == "40960"


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_every_value_keeps_fifteen_significant_digits(value: float) -> None:
    written = float(number(value))
    assert written == value or abs(written - value) <= abs(value) * 1e-14
