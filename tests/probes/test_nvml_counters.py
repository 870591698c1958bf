"""Counter rates and per-process samples, as properties: whatever the values, widths and order."""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from hwtop.probes.nvml.counters import CounterRates
from hwtop.probes.nvml.processes import merge, pick_samples


@settings(max_examples=40, deadline=None)
@given(bits=st.sampled_from([16, 32, 64]), start=st.integers(min_value=0), steps=st.lists(
    st.tuples(st.integers(min_value=0, max_value=2**15), st.integers(min_value=1, max_value=5_000_000)),
    min_size=1, max_size=20))
def test_rate_is_the_wrapped_delta_over_the_timestamps(bits: int, start: int, steps: list[tuple[int, int]]) -> None:
    rates = CounterRates()
    value, at = start % 2**bits, 1_700_000_000_000_000
    assert rates.rate(("gpu", 1), value, at, bits) is None
    for delta, span in steps:
        value, at = (value + delta) % 2**bits, at + span
        assert rates.rate(("gpu", 1), value, at, bits) == delta / (span / 1e6)


def test_a_64_bit_counter_going_backwards_is_a_reset_not_traffic() -> None:
    rates = CounterRates()
    rates.rate((0, 1), 10**12, 1_000_000, 64)
    assert rates.rate((0, 1), 5, 2_000_000, 64) is None
    assert rates.rate((0, 1), 1005, 3_000_000, 64) == 1000.0
    assert rates.rate((0, 1), 1005, 3_000_000, 64) is None  # the same sample again: no time passed


@dataclass
class Sample:
    pid: int
    timeStamp: int  # noqa: N815 - the driver's field name
    smUtil: int  # noqa: N815
    memUtil: int  # noqa: N815


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 4), st.integers(1, 10**7), st.integers(0, 2**32 - 1)), max_size=30),
       st.integers(0, 10**7))
def test_samples_newest_per_pid_after_last_seen_clamped(rows: list[tuple[int, int, int]], last_seen: int) -> None:
    samples = [Sample(pid, stamp, sm, sm) for pid, stamp, sm in rows]
    picked, newest = pick_samples(samples, last_seen)
    fresh = [s for s in samples if s.timeStamp > last_seen]
    assert newest == max([last_seen] + [s.timeStamp for s in fresh])
    for pid, (sm, mem) in picked.items():
        assert 0 <= sm <= 100 and 0 <= mem <= 100
        latest = max((s for s in fresh if s.pid == pid), key=lambda s: s.timeStamp)
        assert sm == min(100, latest.smUtil) or any(
            s.timeStamp == latest.timeStamp and min(100, s.smUtil) == sm for s in fresh if s.pid == pid)


def test_compute_and_graphics_lists_merge_by_pid() -> None:
    merged = merge([(1, 100), (2, None)], [(1, 100), (3, 50)])
    assert [(m.pid, m.kinds, m.used_memory_bytes) for m in merged] == [
        (1, ("compute", "graphics"), 100), (2, ("compute",), None), (3, ("graphics",), 50)]


def test_read_fields_reads_the_bindings_array_as_its_members_say() -> None:
    """The answer's bytes, decoded at the offsets of nvidia-ml-py's own structure, give what each member says,
    for every value type; a structure laid out otherwise (or a plain list) is read member by member."""
    import pynvml

    from hwtop.probes.nvml.counters import _layout, field_number, read_fields

    kinds = [(0, "dVal", 2.5), (1, "uiVal", 2**32 - 1), (2, "ulVal", 2**64 - 2), (3, "ullVal", 2**63 + 5),
             (4, "sllVal", -7), (5, "siVal", -2**31), (6, "usVal", 65535), (9, "ullVal", 1)]
    values = (pynvml.c_nvmlFieldValue_t * len(kinds))()
    for i, (kind, member, number) in enumerate(kinds):
        values[i].fieldId, values[i].scopeId, values[i].timestamp = 138, i, 1_000_000 + i
        values[i].valueType, values[i].nvmlReturn = kind, i % 2 * 3
        union = values[i].value
        if hasattr(type(union), member):
            setattr(union, member, number)
        else:  # bindings older than the type (12.550 has no usVal): the bytes a newer driver writes
            ctypes.c_uint16.from_buffer(union).value = number
    assert _layout(pynvml.c_nvmlFieldValue_t) is not None
    expected = [(int(v.nvmlReturn), *field_number(v), int(v.timestamp)) for v in values]
    assert read_fields(values) == expected == read_fields(list(values))
    assert expected[3] == (3, 2**63 + 5, 64, 1_000_003) and expected[7][1:3] == (None, None)
