"""Marks in a running Python program that make valgrind's callgrind write its counts so far, labelled: the
instructions between two marks are the cost of what ran between them. Outside valgrind a mark does nothing.

Why machine code: callgrind takes client requests (valgrind.h's CALLGRIND_DUMP_STATS_AT), which a C program
issues through a fixed instruction sequence; Python has no binding, so the same sequence (x86-64, from
valgrind.h's VALGRIND_DO_CLIENT_REQUEST_EXPR) is placed in an executable page and called through ctypes. Tried
first and dropped: `--dump-before=FUNCTION` on a C function called through ctypes dumped on the first call only.
"""

from __future__ import annotations

import ctypes
import glob
import mmap
import os
import platform
import sys
from collections import Counter
from collections.abc import Mapping, Sequence

# mov rax, rdi (the request block); xor edx, edx (the default answer); the preamble (rol rdi by 3, 13, 61, 51:
# 128 bits, rdi unchanged); xchg rbx, rbx (the request); mov rax, rdx; ret
_CODE = bytes.fromhex("4889f8" "31d2" "48c1c703" "48c1c70d" "48c1c73d" "48c1c733" "4887db" "4889d0" "c3")
_DUMP_STATS_AT = ((ord("C") << 24) | (ord("T") << 16)) + 3  # VG_USERREQ_TOOL_BASE('C','T') + 3

# Pieces of the harnesses the tick benchmarks run under valgrind (formatted with the harness: braces doubled).
# The marks, loaded from a file (the tree measured may be another checkout): needs {tree} and {marks} (MARKS_FILE).
MARKS_FILE = os.path.abspath(__file__)
PREAMBLE = r'''
import importlib.util, os, sys
sys.path.insert(0, {tree!r})
spec = importlib.util.spec_from_file_location("callgrind_marks", {marks!r})
marks_module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(marks_module)
mark = marks_module.Marks()
'''
# `at(label)` marks once `state["on"]`; `wrap(owner, name, label)` marks what ran before a call and the call itself.
SESSION_MARKS = r'''
state = {{"on": False}}

def at(label):
    if state["on"]:
        mark(label)

def wrap(owner, name, label):
    method = getattr(owner, name)
    def wrapped(*args, **kwargs):
        at("sampler, session")
        try:
            return method(*args, **kwargs)
        finally:
            at(label)
    setattr(owner, name, wrapped)
'''
# The advice, and with {rules} each rule, marked apart: needs `engine_module` and `session`.
ADVICE_MARKS = r'''
update = engine_module.AdviceEngine.update
def marked_update(self, snapshot):
    at("sampler, session")
    try:
        return update(self, snapshot)
    finally:
        at("advice")
engine_module.AdviceEngine.update = marked_update
if {rules}:
    import msgspec.structs
    def by_rule(rule):
        check = rule.check
        def marked(window, thresholds):
            at("advice")
            try:
                return list(check(window, thresholds))
            finally:
                at("rule " + rule.id)
        return msgspec.structs.replace(rule, check=marked)
    session.engine.rules = tuple(by_rule(rule) for rule in session.engine.rules)
'''
# The measured ticks, after the warm-up, each ending in a mark (SESSION_MARKS' `at` marking within): needs
# `session`, `now` (its clock, moved 1 s a tick) and {ticks}.
MEASURED_TICKS = r'''
state["on"] = True
mark("start")
for _ in range({ticks}):
    session.tick()
    now[0] += 1.0
    mark("sampler, session")
state["on"] = False
'''


class Marks:
    def __init__(self) -> None:
        self._page = None
        self._request = None
        if platform.machine() in ("x86_64", "AMD64"):
            self._page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
            self._page.write(_CODE)
            address = ctypes.addressof(ctypes.c_char.from_buffer(self._page))
            self._request = ctypes.CFUNCTYPE(ctypes.c_ulong, ctypes.c_void_p)(address)

    def __call__(self, label: str) -> None:
        """Dump callgrind's counts since the last dump, the dump's `desc: Trigger` naming `label`."""
        if self._request is None:
            return
        text = ctypes.create_string_buffer(label.encode())
        block = (ctypes.c_ulong * 6)(_DUMP_STATS_AT, ctypes.addressof(text), 0, 0, 0, 0)
        self._request(ctypes.addressof(block))


def read_dump(path: str) -> tuple[str, int] | None:
    """(label, instructions) of one callgrind dump; None while it is still being written."""
    label, total = None, None
    with open(path, errors="replace") as handle:
        for line in handle:
            if line.startswith("desc: Trigger:"):
                label = line.split("Client Request:", 1)[1].strip() if "Client Request:" in line else line[14:].strip()
            elif line.startswith("totals:"):
                total = int(line.split()[1])
    return (label, total) if label is not None and total is not None else None


def callgrind_command(out_dir: str, log: str, argv: Sequence[str]) -> list[str]:
    """This Python under callgrind with `argv` (a script and its arguments): dumps to `out_dir`/cg.out.N (the
    marks'), valgrind's own messages to `log`; only the counts, no per-instruction or per-line detail."""
    return ["valgrind", "--tool=callgrind", "--dump-instr=no", "--dump-line=no",
            f"--callgrind-out-file={out_dir}/cg.out", f"--log-file={log}", os.path.realpath(sys.executable), *argv]


def sum_dumps(folder: str) -> Counter[str]:
    """Instructions by label over the dumps in `folder`, all of a run's dumps of a label added up; "start" (the
    warm-up's end, marked only to start the count) is left out."""
    parts: Counter[str] = Counter()
    for path in glob.glob(f"{folder}/cg.out.*"):
        got = read_dump(path)
        if got is not None and got[0] != "start":
            parts[got[0]] += got[1]
    return parts


def print_parts(trees: Sequence[str], results: Sequence[Mapping[str, float]]) -> None:
    """The instructions per tick by part, one column a tree, the last tree's largest first, in M."""
    print("| part | " + " | ".join(trees) + " |")
    print("|---|" + "---|" * len(trees))
    labels = sorted({label for result in results for label in result}, key=lambda label: -results[-1][label])
    for label in labels:
        print(f"| {label} | " + " | ".join(f"{result[label] / 1e6:.2f}" for result in results) + " |")
    print("| **total** | " + " | ".join(f"**{sum(result.values()) / 1e6:.2f}**" for result in results) + " |")
