"""A Flight Recorder dump is a pickle, and a pickle is a program: `pickle.load` on a file someone else could
write runs whatever that file says. torch's dumps hold plain containers only (dicts, lists, tuples, strings,
numbers, None, booleans: FlightRecorder.cpp builds them with c10's IValue pickler), so only the opcodes that build
those are accepted. Every opcode is checked before anything is built (`pickletools.genops` parses, it never
executes), and what is built is built by an Unpickler that can find no class and load no persistent id: two
locks, either of which alone keeps a planted file from running code.

The work is bounded too, before anything is built: the memo lets two bytes (BINGET) add one more reference, so an
8 MiB file of them built 4.2 M entries (174 MiB, 5 s of the tick) as the parse read it. The check stops past
MAX_OPCODES opcodes and past MAX_OBJECTS new objects; a dump of torch's here takes 75-83 opcodes and 19-23 objects an
entry (five frames), so a full default recorder (2,000 entries) with 40 frames each is about 0.9 M and 0.2 M."""

from __future__ import annotations

import io
import pickle
import pickletools

# The opcodes that build plain containers and scalars (and the memo, framing and marks around them). Not here,
# and so refused: GLOBAL, STACK_GLOBAL, REDUCE, BUILD, INST, OBJ, NEWOBJ(_EX), EXT1/2/4, PERSID, BINPERSID,
# BYTEARRAY8 and the out-of-band buffers: everything that names or calls a callable.
PLAIN = frozenset({
    "PROTO", "FRAME", "STOP", "MARK", "POP", "POP_MARK", "DUP", "NONE", "NEWTRUE", "NEWFALSE",
    "INT", "BININT", "BININT1", "BININT2", "LONG", "LONG1", "LONG4", "FLOAT", "BINFLOAT",
    "STRING", "BINSTRING", "SHORT_BINSTRING", "UNICODE", "SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8",
    "BINBYTES", "SHORT_BINBYTES", "BINBYTES8",
    "EMPTY_LIST", "APPEND", "APPENDS", "LIST", "EMPTY_TUPLE", "TUPLE", "TUPLE1", "TUPLE2", "TUPLE3",
    "EMPTY_DICT", "DICT", "SETITEM", "SETITEMS", "EMPTY_SET", "ADDITEMS", "FROZENSET",
    "PUT", "BINPUT", "LONG_BINPUT", "MEMOIZE", "GET", "BINGET", "LONG_BINGET",
})
# The plain opcodes that build a new object (a container, a string, a number), not a reference, a mark or a slot.
NEW_OBJECT = PLAIN - {
    "PROTO", "FRAME", "STOP", "MARK", "POP", "POP_MARK", "DUP", "NONE", "NEWTRUE", "NEWFALSE", "EMPTY_TUPLE",
    "PUT", "BINPUT", "LONG_BINPUT", "MEMOIZE", "GET", "BINGET", "LONG_BINGET",
    "APPEND", "APPENDS", "SETITEM", "SETITEMS", "ADDITEMS",
}
MAX_OPCODES = 2_000_000
MAX_OBJECTS = 500_000


class NotPlain(ValueError):
    """The pickle asks for more than plain containers: refused, nothing built."""


class _Containers(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> object:  # noqa: ARG002 - refused whatever it names
        raise NotPlain(f"it names {module}.{name}"[:120])

    def persistent_load(self, pid: object) -> object:  # noqa: ARG002
        raise NotPlain("it loads a persistent id")


def load_plain(data: bytes) -> object:
    """The value a pickle of plain containers holds; NotPlain for any other pickle or one past the budgets,
    ValueError for a broken one."""
    try:
        _check(data)
    except NotPlain:
        raise
    except Exception as error:  # genops raises ValueError, and others, on a truncated or garbled pickle
        raise ValueError(f"not a whole pickle ({type(error).__name__})") from None
    try:
        return _Containers(io.BytesIO(data)).load()
    except NotPlain:
        raise
    except Exception as error:  # a pickle genops passed but that will not build (a bad memo index, say)
        raise ValueError(f"unreadable pickle ({type(error).__name__})") from None


def _check(data: bytes) -> None:
    """Every opcode plain, and no more of them, nor of new objects, than the budgets: checked as it is parsed, so a
    flood stops at the budget."""
    opcodes = objects = 0
    for opcode, _, _ in pickletools.genops(data):
        name = opcode.name
        if name not in PLAIN:
            raise NotPlain(f"opcode {name}")
        opcodes += 1
        if opcodes > MAX_OPCODES:
            raise NotPlain(f"more than {MAX_OPCODES:,} opcodes: more than a dump holds, not read")
        if name in NEW_OBJECT:
            objects += 1
            if objects > MAX_OBJECTS:
                raise NotPlain(f"more than {MAX_OBJECTS:,} objects: more than a dump holds, not read")
