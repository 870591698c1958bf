from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hwtop.probes.sysfs import format_cpulist, parse_cpulist, parse_int_row, parse_meminfo_kb, parse_uptime


@pytest.mark.parametrize(("text", "expected"), [
    ("0-3,8-11", (0, 1, 2, 3, 8, 9, 10, 11)),
    ("0", (0,)),
    ("0-1\n", (0, 1)),
    ("", ()),
    ("\n", ()),
    ("5,1,3", (1, 3, 5)),
    ("0-15,64-79", tuple(range(16)) + tuple(range(64, 80))),
])
def test_cpulist_examples(text: str, expected: tuple[int, ...]) -> None:
    assert parse_cpulist(text) == expected


@pytest.mark.parametrize("text", ["abc", "3-1", "0-", "-4", "1,,2", "0-3;4", "0x1", "1-2-3"])
def test_cpulist_garbage_raises_value_error(text: str) -> None:
    with pytest.raises(ValueError):
        parse_cpulist(text)


@given(st.sets(st.integers(min_value=0, max_value=1023), max_size=200))
def test_cpulist_round_trips_any_set(cpus: set[int]) -> None:
    assert parse_cpulist(format_cpulist(tuple(cpus))) == tuple(sorted(cpus))


@given(st.text(max_size=40))
def test_cpulist_never_fails_other_than_value_error(text: str) -> None:
    try:
        result = parse_cpulist(text)
    except ValueError:
        return
    assert all(isinstance(c, int) and c >= 0 for c in result)


def test_format_cpulist_compresses_ranges() -> None:
    assert format_cpulist((0, 1, 2, 3, 8, 10, 11)) == "0-3,8,10-11"
    assert format_cpulist(()) == ""


def test_node_meminfo_in_bytes() -> None:
    text = "Node 1 MemTotal:       131072000 kB\nNode 1 MemFree:        1000 kB\nNode 1 HugePages_Total:     0\n"
    values = parse_meminfo_kb(text)
    assert values["MemTotal"] == 131072000 * 1024
    assert values["MemFree"] == 1000 * 1024
    assert values["HugePages_Total"] == 0
    assert parse_meminfo_kb(text, frozenset({"MemFree", "Absent"})) == {"MemFree": 1000 * 1024}


@given(st.text(max_size=200))
def test_meminfo_garbage_never_raises(text: str) -> None:
    assert isinstance(parse_meminfo_kb(text), dict)


def test_distance_row() -> None:
    assert parse_int_row("10 21\n") == (10, 21)
    with pytest.raises(ValueError):
        parse_int_row("10 x")


@pytest.mark.parametrize(("text", "seconds"), [
    ("93784.50 180000.00\n", 93784.5), (b"5 1", 5.0), ("INFINITY 1", None), ("nan", None), ("inf", None),
    ("-1 0", None), ("", None), ("up", None),
])
def test_uptime_is_a_finite_number_of_seconds_or_none(text: str | bytes, seconds: float | None) -> None:
    """Python reads 'inf' and 'nan' as floats; a snapshot holding one could not be written as JSON (hypothesis
    found a /proc/uptime of 'INFINITY' in tests/session/test_faults.py)."""
    assert parse_uptime(text) == seconds


def _read_text_as_open_does(path: str) -> str | None:
    try:
        with open(path, encoding="ascii", errors="strict") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError):
        return None


@given(st.binary(max_size=300))
def test_read_text_reads_what_text_mode_open_reads(data: bytes) -> None:
    """Any bytes (CR, CRLF, non-ASCII, NUL): what open() in text mode gives, or None where it raises."""
    import tempfile

    from hwtop.probes.sysfs import read_text

    with tempfile.TemporaryDirectory() as root:
        with open(f"{root}/f", "wb") as handle:
            handle.write(data)
        assert read_text(root, "/f") == _read_text_as_open_does(f"{root}/f")


def test_read_text_of_what_is_not_a_readable_file(tmp_path) -> None:
    from hwtop.probes.sysfs import read_text

    (tmp_path / "dir").mkdir()
    (tmp_path / "big").write_bytes(b"x\r\n" * 70000)
    assert read_text(str(tmp_path), "dir") is None and read_text(str(tmp_path), "missing") is None
    assert read_text(str(tmp_path), "big") == "x\n" * 70000 == _read_text_as_open_does(str(tmp_path / "big"))


def test_proc_lines_are_the_files_lines_as_text_mode_ends_them(tmp_path) -> None:
    from hwtop.probes.sysfs import proc_lines

    (tmp_path / "a").write_bytes(b"one\r\ntwo\rthree\n\nfour\x1cfive\xff")
    assert proc_lines(str(tmp_path), "a") == [b"one", b"two", b"three", b"", b"four\x1cfive\xff"]
    (tmp_path / "empty").write_bytes(b"")
    assert proc_lines(str(tmp_path), "empty") == []
    with pytest.raises(FileNotFoundError, match="missing"):
        proc_lines(str(tmp_path), "missing")
