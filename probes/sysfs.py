"""Small readers for procfs/sysfs text, rooted at a directory so fixture trees can stand in for `/`."""

from __future__ import annotations

import math
import os
import re
from functools import lru_cache

_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")


def read_bytes(path: str, limit: int | None = None) -> bytes:
    """The file's bytes (its first `limit` or a little more, where given), through one descriptor rather than
    open()'s three layered file objects: these small files are read many a tick. OSError as os.open raises it."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return read_fd(fd, limit)
    finally:
        os.close(fd)


def read_fd(fd: int, limit: int | None = None) -> bytes:
    """An open file's bytes to its end (its first `limit` or a little more, where given), for a reader that opens
    the file itself (with flags of its own, checked with fstat first); the descriptor stays the caller's."""
    chunks = []
    total = 0
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
        total += len(chunk)
        if limit is not None and total >= limit:
            break
    return b"".join(chunks)


def read_text(root: str, path: str) -> str | None:
    """The file's text, or None when it is missing, unreadable or not text (sysfs does all three). Read as open()
    in text mode reads it (ASCII, strict; newlines made "\n"): a DGX's port counters are a dozen files a tick."""
    try:
        text = read_bytes(os.path.join(root, path.lstrip("/"))).decode("ascii", "strict")
    except (OSError, UnicodeDecodeError):
        return None
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def proc_lines(proc: str, name: str) -> list[bytes]:
    """The lines of `name` under `proc` (the probe's root's /proc), without their ends ("\r" and "\r\n" end one
    too, as open() in text mode takes them): bytes, parsed as they are, a name decoded with os.fsdecode (the file
    system's encoding and error handler, as psutil decodes these files) only where it is kept. OSError, naming the
    file, where it cannot be read: the tick's probe error says so.

    The one rule of the /proc counter readers (cpu, disks, network): a file that cannot be read is that error; a
    line they cannot read is N/A for the core, disk or interface it carries, and the rest of the file is read."""
    data = read_bytes(f"{proc}/{name}")
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    lines = data.split(b"\n")  # not splitlines(): an interface's name may hold any other separator
    if lines[-1] == b"":
        lines.pop()
    return lines


def parse_uptime(text: str | bytes) -> float | None:
    """Seconds since boot from /proc/uptime's first field; None unless it is a finite number of seconds (Python's
    float() also reads "inf" and "nan", which no snapshot can carry into JSON)."""
    try:
        seconds = float(text.split()[0])
    except (ValueError, IndexError):
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def parse_cpulist(text: str) -> tuple[int, ...]:
    """Parse a kernel cpulist such as "0-3,8-11" into sorted CPU numbers.

    An empty string is an empty list (a memory-only NUMA node). Anything else malformed raises ValueError,
    so callers decide whether to skip the node or fall back.
    """
    text = text.strip()
    if not text:
        return ()
    cpus: set[int] = set()
    for part in text.split(","):
        match = _RANGE.match(part.strip())
        if match is None:
            raise ValueError(f"bad cpulist element {part!r}")
        low = int(match.group(1))
        high = int(match.group(2)) if match.group(2) is not None else low
        if high < low or high - low > 65536:
            raise ValueError(f"bad cpulist range {part!r}")
        cpus.update(range(low, high + 1))
    return tuple(sorted(cpus))


def parse_meminfo_kb(text: str, keys: frozenset[str] | None = None) -> dict[str, int]:
    """Parse /proc/meminfo or a node's meminfo ("Node 0 MemTotal:  123 kB") into bytes by key; only `keys`, if
    given (a node's file has ~50 lines, read every tick for five of them)."""
    values: dict[str, int] = {}
    for line in text.splitlines():
        key, sep, rest = line.partition(":")
        if not sep:
            continue
        words = key.split()
        key = words[-1] if words else key
        if keys is not None and key not in keys:
            continue
        parts = rest.split()
        if not parts:
            continue
        try:
            number = int(parts[0])
        except ValueError:
            continue
        values[key] = number * 1024 if len(parts) > 1 and parts[1].lower() == "kb" else number
    return values


def parse_int_row(text: str) -> tuple[int, ...]:
    """Parse a whitespace-separated row of integers (a NUMA distance row); ValueError on garbage."""
    return tuple(int(part) for part in text.split())


def format_cpulist(cpus: tuple[int, ...] | list[int]) -> str:
    """The inverse of parse_cpulist: (0, 1, 2, 3, 8) → "0-3,8"."""
    return _format_cpulist(tuple(cpus))


@lru_cache(maxsize=256)
def _format_cpulist(cpus: tuple[int, ...]) -> str:
    """Remembered: the job view formats every process's affinity (256 CPUs on a DGX) every tick, mostly the same."""
    ordered = sorted(set(cpus))
    parts: list[str] = []
    start = None
    for i, cpu in enumerate(ordered):
        if start is None:
            start = cpu
        if i + 1 == len(ordered) or ordered[i + 1] != cpu + 1:
            parts.append(str(start) if start == cpu else f"{start}-{cpu}")
            start = None
    return ",".join(parts)
