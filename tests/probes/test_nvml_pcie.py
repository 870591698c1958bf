"""32-bit PCIe counters widened (probes/nvml/pcie_wide.py): the total of the wrapped differences, readings from two
threads in any order, and the poller's lifetime."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hwtop.probes.nvml.pcie_wide import CounterPoller, WideCounters

WRAP = 2**32


@given(st.integers(0, WRAP - 1), st.lists(st.integers(0, WRAP - 1), min_size=1, max_size=50))
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_readings_under_a_wrap_apart_add_up_to_the_true_total(start: int, steps: list[int]) -> None:
    counters, true_total, raw = WideCounters(), 0, start
    counters.feed(197, raw, 0, 32)
    for at, step in enumerate(steps, start=1):
        raw, true_total = (raw + step) % WRAP, true_total + step
        assert counters.feed(197, raw, at, 32) == (true_total, at)


def test_an_older_reading_fed_late_adds_nothing() -> None:
    """The tick read at 1,000 µs but fed after the poller's reading of 1,050 µs: nothing is counted twice, and
    the total and time answered are the newest reading's."""
    counters = WideCounters()
    counters.feed(198, WRAP - 100, 0, 32)
    assert counters.feed(198, 400, 1_050, 32) == (500, 1_050)
    assert counters.feed(198, 300, 1_000, 32) == (500, 1_050)
    assert counters.feed(198, 900, 1_100, 32) == (1_000, 1_100)


def test_the_poller_is_active_until_its_deadline_and_keep_alive_extends_it() -> None:
    now = [0.0]
    poller = CounterPoller(lambda: True, clock=lambda: now[0], threaded=False)
    assert not poller.active
    poller.keep_alive(10.0)
    now[0] = 9.9
    assert poller.active and poller.poll_once()
    poller.keep_alive(10.0)
    now[0] = 19.8
    assert poller.active
    now[0] = 19.9
    assert not poller.active


def test_a_threaded_poller_ends_its_thread_on_a_failed_read() -> None:
    done = threading.Event()

    def read() -> bool:
        done.set()
        return False

    poller = CounterPoller(read, period=0.01)
    poller.keep_alive(30.0)
    assert done.wait(5)
    for _ in range(200):
        if not poller.active and not [t for t in threading.enumerate() if t.name == "hwtop-pcie-poller"]:
            break
        threading.Event().wait(0.01)
    assert not poller.active
    assert not [t for t in threading.enumerate() if t.name == "hwtop-pcie-poller"]
    poller.close()
