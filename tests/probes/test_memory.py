"""The memory probe reads /proc/meminfo once a tick; psutil answers where that file lacks a figure."""

from __future__ import annotations

from pathlib import Path

import psutil
from hypothesis import given
from hypothesis import strategies as st

from hwtop.probes.memory import parse_meminfo, read_memory

MEMINFO = b"""MemTotal:       12345678 kB
MemFree:        10000000 kB
MemAvailable:   11000000 kB
Buffers:          100000 kB
SwapCached:            0 kB
SwapTotal:       2097148 kB
SwapFree:        1048572 kB
HugePages_Total:       0
Hugepagesize:       2048 kB
"""


def _root(tmp_path: Path, meminfo: bytes) -> str:
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "meminfo").write_bytes(meminfo)
    return str(tmp_path)


def test_the_four_figures_come_from_one_read_in_bytes(tmp_path: Path) -> None:
    memory = read_memory(_root(tmp_path, MEMINFO))
    assert memory.total_bytes == 12345678 * 1024
    assert memory.available_bytes == 11000000 * 1024
    assert memory.used_bytes == (12345678 - 11000000) * 1024
    assert memory.swap_total_bytes == 2097148 * 1024
    assert memory.swap_used_bytes == (2097148 - 1048572) * 1024


def test_this_machine_reads_as_psutil_reads_it() -> None:
    ours, virtual, swap = read_memory(), psutil.virtual_memory(), psutil.swap_memory()
    assert ours.total_bytes == virtual.total and ours.swap_total_bytes == swap.total
    assert abs(ours.available_bytes - virtual.available) < 256 * 2**20  # read a moment apart
    assert abs(ours.swap_used_bytes - swap.used) < 256 * 2**20


def test_a_meminfo_without_memavailable_is_left_to_psutil(tmp_path: Path) -> None:
    """Linux before 3.14 has no MemAvailable; psutil estimates it. This machine's psutil answers, not the file."""
    old = b"\n".join(line for line in MEMINFO.splitlines() if not line.startswith(b"MemAvailable"))
    memory = read_memory(_root(tmp_path, old))
    assert memory.total_bytes == psutil.virtual_memory().total != 12345678 * 1024


def test_a_missing_meminfo_is_left_to_psutil(tmp_path: Path) -> None:
    assert read_memory(str(tmp_path)).total_bytes == psutil.virtual_memory().total


def test_a_figure_that_is_not_a_whole_number_is_not_read() -> None:
    assert parse_meminfo(MEMINFO.replace(b"SwapFree:        1048572 kB", b"SwapFree:  -1 kB")) is None
    assert parse_meminfo(MEMINFO.replace(b"MemTotal:       12345678 kB", b"MemTotal: 12 MB")) is None
    assert parse_meminfo(MEMINFO.replace(b"MemTotal:       12345678 kB", b"MemTotal:")) is None


def test_available_above_total_is_capped(tmp_path: Path) -> None:
    """A kernel's estimate can pass the total for a moment; used memory is never negative."""
    memory = read_memory(_root(tmp_path, MEMINFO.replace(b"11000000", b"13000000")))
    assert memory.available_bytes == memory.total_bytes and memory.used_bytes == 0


@given(st.binary(max_size=400))
def test_any_bytes_parse_to_four_figures_or_none(data: bytes) -> None:
    found = parse_meminfo(data)
    assert found is None or (len(found) == 4 and all(isinstance(v, int) and v >= 0 for v in found.values()))


@given(st.lists(st.sampled_from([b"MemTotal", b"MemAvailable", b"SwapTotal", b"SwapFree", b"Cached"]), max_size=8),
       st.integers(min_value=0, max_value=2**50))
def test_lines_in_any_order_and_number(names: list[bytes], value: int) -> None:
    data = b"\n".join(name + b": " + str(value).encode() + b" kB" for name in names)
    found = parse_meminfo(data)
    wanted = {b"MemTotal", b"MemAvailable", b"SwapTotal", b"SwapFree"}
    assert (found is not None) == wanted.issubset(names)
    assert found is None or set(found.values()) == {value * 1024}
