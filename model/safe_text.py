"""Text that other people control (process names and command lines, users, hostnames, GPU names, exporter
labels, recordings, config values, error messages) made safe to show: every control character becomes a visible
stand-in, so none reaches a terminal as a command and none breaks a line. Headless (no Rich, no Textual): the
widgets build their `Text` from it, and doctor, report, topo and the command line print through it.

Each stand-in is one code point for one code point, so styled text keeps its spans when it is cleaned."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

UNSHOWABLE = "\N{REPLACEMENT CHARACTER}"  # a C1 control, or a byte that was not UTF-8 (a lone surrogate)

_STAND_INS: dict[str, str] = {chr(code): chr(0x2400 + code) for code in range(0x20) if code != 0x09}  # ␀ … ␛ … ␟
_STAND_INS["\x7f"] = "\N{SYMBOL FOR DELETE}"  # ␡
_STAND_INS.update({"\u2028": "\N{SYMBOL FOR NEWLINE}", "\u2029": "\N{SYMBOL FOR NEWLINE}"})  # line/paragraph separator
# Anything else matched is UNSHOWABLE: C1 (CSI 0x9b, OSC 0x9d, DCS 0x90, …) and surrogateescape'd bytes from a
# decoder. Looked up per match rather than tabled: a table of the 2,048 surrogates would be built at every start.
_UNSAFE = "[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]"  # compiled on first need, not at import


@functools.cache
def _unsafe() -> re.Pattern[str]:
    return re.compile(_UNSAFE)


def _stand_in(match: re.Match[str]) -> str:
    return _STAND_INS.get(match.group(), UNSHOWABLE)


def printable(text: str) -> str:
    """`text` with every control character (C0 but tab, DEL, C1, line separators) and every undecodable byte
    replaced by a visible stand-in: ESC shows as ␛, a newline as ␊, CSI (0x9b) as �. The length is kept."""
    if text.isprintable():  # in C, and true of nearly every name: none of the characters replaced is printable
        return text
    return _unsafe().sub(_stand_in, text)


def printable_lines(lines: Iterable[str]) -> str:
    """Lines of a plain-text output joined by newlines, each made printable: a newline inside a line (from a
    command line, say) shows as ␊ and cannot start a line of its own."""
    return "\n".join(printable(line) for line in lines)
