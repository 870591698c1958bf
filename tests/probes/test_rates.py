from __future__ import annotations

from hwtop.probes.rates import RateMeter, counter_delta


def test_first_sample_has_no_delta() -> None:
    assert counter_delta(None, 100) is None


def test_reset_counter_gives_none_not_negative() -> None:
    assert counter_delta(1000, 10) is None


def test_wrapping_counter_with_known_width() -> None:
    assert counter_delta(2**32 - 10, 5, wrap_at=2**32) == 15


def test_meter_rates_per_second_and_forgets() -> None:
    meter = RateMeter()
    assert meter.rate("a", 100.0, 10.0) is None
    assert meter.rate("a", 400.0, 12.0) == 150.0
    assert meter.rate("a", 50.0, 13.0) is None  # reset
    assert meter.rate("a", 150.0, 14.0) == 100.0
    assert meter.rate("a", 150.0, 14.0) is None  # no time passed
    meter.rate("b", 1.0, 1.0)
    meter.forget_except({"a"})
    assert meter.rate("b", 5.0, 2.0) is None
