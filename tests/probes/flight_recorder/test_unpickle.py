"""A dump's pickle builds plain containers or nothing: every way a pickle can reach a callable is refused before
anything is built, and any bytes at all end in a value or a ValueError."""

from __future__ import annotations

import copyreg
import os
import pickle
import pickletools
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hwtop.probes.flight_recorder import unpickle
from hwtop.probes.flight_recorder.parse import MAX_ENTRIES, parse_dump
from hwtop.probes.flight_recorder.unpickle import NotPlain, load_plain
from tests.probes.flight_recorder.conftest import FIXTURES

# (bytes are left out: pickle writes them through a class, _codecs.encode, under protocols 0-2; torch's dumps hold none)
PLAIN = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
                     lambda inner: st.lists(inner, max_size=5) | st.tuples(inner, inner)
                     | st.dictionaries(st.text(max_size=10), inner, max_size=5), max_leaves=30)


@given(PLAIN, st.integers(min_value=0, max_value=pickle.HIGHEST_PROTOCOL))
@settings(max_examples=40, deadline=None)
def test_plain_values_come_back_as_they_went_in(value: object, protocol: int) -> None:
    assert load_plain(pickle.dumps(value, protocol=protocol)) == value


@given(st.binary(max_size=300))
@settings(max_examples=100, deadline=None)
def test_any_bytes_are_a_value_or_a_value_error(data: bytes) -> None:
    try:
        value = load_plain(data)
    except ValueError:
        return
    try:
        parse_dump(value, "x", 0.0)
    except ValueError:
        pass


@given(PLAIN)
@settings(max_examples=40, deadline=None)
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_any_plain_value_is_a_dump_or_one_value_error(value: object) -> None:
    try:
        parse_dump(value, "x", 0.0)
    except ValueError as error:
        assert "\n" not in str(error)


def test_a_class_a_reduce_and_an_extension_are_each_refused(tmp_path: Path) -> None:
    marker = tmp_path / "ran"

    class Planted:
        def __reduce__(self) -> tuple[object, tuple[str]]:
            return (os.mkdir, (str(marker),))

    copyreg.add_extension(os.mkdir.__module__, "mkdir", 0x7ff0)  # EXT2: a callable by number, no name in the pickle
    try:
        extension = pickle.dumps(Planted(), protocol=2)
        assert b"\x83" in extension  # the EXT2 opcode
        pickle.loads(extension)  # planted as it would work
        assert marker.exists()
        marker.rmdir()
        for data in (extension, pickle.dumps(Planted(), protocol=0), pickle.dumps(Planted(), protocol=4),
                     pickle.dumps(pickle.Pickler, protocol=3)):
            with pytest.raises(NotPlain):
                load_plain(data)
    finally:
        copyreg.remove_extension(os.mkdir.__module__, "mkdir", 0x7ff0)
    assert not marker.exists()


def _memo_flood(references: int) -> bytes:
    """A list holding one memoised empty list `references` times: two bytes a reference (BINGET), the memo amplification
    a planted dump can use to build millions of entries from a few MB."""
    return b"\x80\x02]q\x00(]q\x01" + b"h\x01" * (references - 1) + b"e."


def _dict_flood(count: int) -> bytes:
    """A list of `count` new empty dicts: one byte an object (EMPTY_DICT)."""
    return b"\x80\x02]q\x00(" + b"}" * count + b"e."


def test_a_memo_flood_past_the_opcode_budget_is_refused_before_anything_is_built(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(unpickle, "MAX_OPCODES", 1000)
    assert load_plain(_memo_flood(980)) == [[]] * 980  # within the budget: built
    with pytest.raises(NotPlain, match=r"^more than 1,000 opcodes"):
        load_plain(_memo_flood(1000))


def test_objects_past_the_object_budget_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(unpickle, "MAX_OBJECTS", 500)
    assert load_plain(_dict_flood(498)) == [{}] * 498
    with pytest.raises(NotPlain, match=r"^more than 500 objects"):
        load_plain(_dict_flood(500))


def test_a_full_recorder_like_the_real_dumps_fits_the_budgets() -> None:
    """The budgets hold a recorder of MAX_ENTRIES entries such as torch wrote here, with room for deeper stacks."""
    for scenario in ("hang", "healthy", "waiting"):
        data = (FIXTURES / scenario / "rank_0").read_bytes()
        entries = len(load_plain(data)["entries"])  # type: ignore[index]
        opcodes = [op.name for op, _, _ in pickletools.genops(data)]
        objects = sum(1 for name in opcodes if name in unpickle.NEW_OBJECT)
        assert opcodes and objects
        assert len(opcodes) / entries * MAX_ENTRIES < unpickle.MAX_OPCODES
        assert objects / entries * MAX_ENTRIES < unpickle.MAX_OBJECTS


def test_only_the_newest_entries_are_read_past_the_entries_bound() -> None:
    entries = [{"collective_seq_id": seq, "process_group": ("old" if seq <= 5 else "new", "d"), "state": "completed"}
               for seq in range(1, MAX_ENTRIES + 6)]
    dump = parse_dump({"entries": entries}, "x", 0.0)
    assert [(g.pg, g.launched, g.completed) for g in dump.groups] == [("new", MAX_ENTRIES + 5, MAX_ENTRIES + 5)]


def test_integers_past_64_bits_are_not_taken() -> None:
    """A 2,000-bit time would end a float conversion in OverflowError, which no caller expects of a dump."""
    entries = [{"collective_seq_id": 1, "process_group": ("0", "d"), "time_created_ns": 2 ** 2000},
               {"collective_seq_id": 2 ** 64, "process_group": ("0", "d")}]
    (group,) = parse_dump({"entries": entries, "pg_status": {"0": {"last_completed_collective": -2 ** 70}}},
                          "x", 0.0).groups
    assert (group.launched, group.completed) == (1, 0)
    assert group.pending is not None and group.pending.created_at is None
