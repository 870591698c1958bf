"""A dump's pickle builds plain containers or nothing: every way a pickle can reach a callable is refused before
anything is built, and any bytes at all end in a value or a ValueError."""

from __future__ import annotations

import copyreg
import os
import pickle
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hwtop.probes.flight_recorder.parse import parse_dump
from hwtop.probes.flight_recorder.unpickle import NotPlain, load_plain

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
