"""A Flight Recorder dump is a pickle, and a pickle is a program: `pickle.load` on a file someone else could
write runs whatever that file says. torch's dumps hold plain containers only (dicts, lists, tuples, strings,
numbers, None, booleans: FlightRecorder.cpp builds them with c10's IValue pickler), so only the opcodes that build
those are accepted. Every opcode is checked before anything is built (`pickletools.genops` parses, it never
executes), and what is built is built by an Unpickler that can find no class and load no persistent id: two
locks, either of which alone keeps a planted file from running code."""

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


class NotPlain(ValueError):
    """The pickle asks for more than plain containers: refused, nothing built."""


class _Containers(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> object:  # noqa: ARG002 - refused whatever it names
        raise NotPlain(f"it names {module}.{name}"[:120])

    def persistent_load(self, pid: object) -> object:  # noqa: ARG002
        raise NotPlain("it loads a persistent id")


def load_plain(data: bytes) -> object:
    """The value a pickle of plain containers holds; NotPlain for any other pickle, ValueError for a broken one."""
    try:
        for opcode, _, _ in pickletools.genops(data):
            if opcode.name not in PLAIN:
                raise NotPlain(f"opcode {opcode.name}")
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
