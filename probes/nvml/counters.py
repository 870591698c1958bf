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

import ctypes
import struct
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

_UNION_FORMATS = {0: "d", 1: "I", 2: "L", 3: "Q", 4: "q", 5: "i", 6: "H"}  # native, as the union's members
_UNIONS: dict[int, struct.Struct] = {kind: struct.Struct("@" + code) for kind, code in _UNION_FORMATS.items()}


def field_number(value: Any) -> tuple[float | int | None, int | None]:
    """(the number a c_nvmlFieldValue_t holds, read by its valueType; the counter's width in bits). Bindings older
    than a value type (nvidia-ml-py 12.550 has no usVal) under a newer driver: read from the union's own bytes."""
    kind = int(value.valueType)
    member, bits = VALUE_TYPES.get(kind, (None, None))
    if member is None:
        return None, None
    if not hasattr(type(value.value), member):
        return _UNIONS[kind].unpack_from(bytes(value.value))[0], bits
    return getattr(value.value, member), bits


# (return code, number, bits, timestamp µs) of one field value
Field = tuple[int, float | int | None, int | None, int]
_LAYOUTS: dict[type, struct.Struct | None] = {}


def _layout(element: type) -> struct.Struct | None:
    """One c_nvmlFieldValue_t's timestamp, valueType, nvmlReturn and value union as a struct format, placed at
    the offsets the bindings' own structure gives them; None for a structure not laid out as expected."""
    if element in _LAYOUTS:
        return _LAYOUTS[element]
    layout = None
    try:
        wanted = (("timestamp", "q"), ("valueType", "I"), ("nvmlReturn", "I"), ("value", "8s"))
        placed = sorted((getattr(element, name).offset, getattr(element, name).size, code, name)
                        for name, code in wanted)
        if [name for *_, name in placed] != [name for name, _ in wanted]:
            raise ValueError("the members in another order")
        parts, at = [], 0
        for offset, size, code, _ in placed:
            if offset < at or size != struct.calcsize("=" + code):
                raise ValueError(code)
            parts.append(f"{offset - at}x{code}")
            at = offset + size
        parts.append(f"{ctypes.sizeof(element) - at}x")
        layout = struct.Struct("=" + "".join(parts))
    except (AttributeError, TypeError, ValueError, struct.error):
        layout = None
    _LAYOUTS[element] = layout
    return layout


def read_fields(values: Any) -> list[Field]:
    """Each value of an nvmlDeviceGetFieldValues answer as (return code, number by its valueType, the counter's
    bits, timestamp µs). The bindings' array is read as bytes in one copy, not a value's members one attribute
    read each (the bindings' structures decode every read in Python); anything else, member by member."""
    element = getattr(values, "_type_", None)
    layout = _layout(element) if isinstance(values, ctypes.Array) and isinstance(element, type) else None
    if layout is None:
        out: list[Field] = []
        for value in values:
            number, bits = field_number(value)
            out.append((int(value.nvmlReturn), number, bits, int(value.timestamp)))
        return out
    fields = []
    for stamp, kind, code, union in layout.iter_unpack(ctypes.string_at(ctypes.addressof(values),
                                                                        ctypes.sizeof(values))):
        decode = _UNIONS.get(kind)
        bits = None if decode is None else VALUE_TYPES[kind][1]
        fields.append((code, None if decode is None else decode.unpack_from(union)[0], bits, stamp))
    return fields


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
