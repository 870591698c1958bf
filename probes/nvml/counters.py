"""Rates from NVML's cumulative counters, read as counters: each field value's own type and timestamp.

A field value says how its number is stored (`valueType`: which member of the union to read, and so the
width at which the counter wraps) and when the driver sampled it (`timestamp`, µs). The rate between two
readings is the wrapped difference over the difference of those timestamps, not of the host's clock: the
driver's cached value can be older than the moment it was read. For a 64-bit counter, a difference of more
than half its range cannot be traffic: it is a reset (driver reload, GPU reset) and gives no rate.
A 32-bit counter (R580's PCIe byte fields) can wrap more than once between two readings: probes/nvml/pcie_wide.py
widens those before they come here.
"""

from __future__ import annotations

from typing import Any

import msgspec

# nvmlValueType_t -> (union member, bits); None: not an integer counter
VALUE_TYPES: dict[int, tuple[str, int | None]] = {
    0: ("dVal", None),
    1: ("uiVal", 32),
    2: ("ulVal", 64),
    3: ("ullVal", 64),
    4: ("sllVal", 64),
    5: ("siVal", 32),
    6: ("usVal", 16),
}



def field_number(value: Any) -> tuple[float | int | None, int | None]:
    """(the number a c_nvmlFieldValue_t holds, read by its valueType; the counter's width in bits)."""
    member, bits = VALUE_TYPES.get(int(value.valueType), (None, None))
    if member is None:
        return None, None
    return getattr(value.value, member), bits


class _Reading(msgspec.Struct):
    value: int
    at_us: int


class CounterRates:
    """The last reading of each counter, and the rate since it."""

    def __init__(self) -> None:
        self._last: dict[tuple[object, ...], _Reading] = {}

    def rate(self, key: tuple[object, ...], value: int, at_us: int, bits: int) -> float | None:
        """Units per second since the previous reading of `key` (None on the first, or after a reset)."""
        previous = self._last.get(key)
        self._last[key] = _Reading(value, at_us)
        if previous is None or at_us <= previous.at_us:
            return None
        span = 1 << bits
        delta = (value - previous.value) % span
        if bits >= 64 and delta >= span // 2:
            return None
        return delta / ((at_us - previous.at_us) / 1e6)
