"""Host memory and swap, from one read of /proc/meminfo.

psutil's `swap_memory()` also parses /proc/vmstat (about 170 lines) for swap-in/out counts that hwtop does not
show: with `virtual_memory()` that made three file reads, most of the memory probe's cost each tick. One read of
/proc/meminfo gives all four figures. Where it lacks one (MemAvailable came with Linux 3.14; a container may hide
the file), psutil answers, with its own fallbacks."""

from __future__ import annotations

import os

import psutil

from hwtop.model.snapshot import MemorySnapshot

_WANTED = (b"MemTotal", b"MemAvailable", b"SwapTotal", b"SwapFree")


def parse_meminfo(data: bytes) -> dict[bytes, int] | None:
    """MemTotal, MemAvailable, SwapTotal and SwapFree in bytes; None unless all four are there as whole numbers."""
    found: dict[bytes, int] = {}
    for line in data.splitlines():
        name, sep, rest = line.partition(b":")
        if sep and name in _WANTED:
            fields = rest.split()
            if not fields or not fields[0].isdigit() or fields[1:] not in ([], [b"kB"]):
                return None
            found[name] = int(fields[0]) * (1024 if fields[1:] else 1)
    return found if len(found) == len(_WANTED) else None


def read_memory(root: str = "/") -> MemorySnapshot:
    try:
        with open(os.path.join(root, "proc/meminfo"), "rb") as handle:
            figures = parse_meminfo(handle.read())
    except OSError:
        figures = None
    if figures is None:
        return _from_psutil()
    total, available = figures[b"MemTotal"], min(figures[b"MemAvailable"], figures[b"MemTotal"])
    swap_total = figures[b"SwapTotal"]
    return MemorySnapshot(
        total_bytes=total,
        available_bytes=available,
        used_bytes=total - available,
        swap_total_bytes=swap_total,
        swap_used_bytes=max(0, swap_total - figures[b"SwapFree"]),
    )


def _from_psutil() -> MemorySnapshot:
    virtual = psutil.virtual_memory()
    swap = psutil.swap_memory()
    return MemorySnapshot(
        total_bytes=int(virtual.total),
        available_bytes=int(virtual.available),
        used_bytes=int(virtual.total - virtual.available),
        swap_total_bytes=int(swap.total),
        swap_used_bytes=int(swap.used),
    )
