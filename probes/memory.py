"""Host memory and swap."""

from __future__ import annotations

import psutil

from hwtop.model.snapshot import MemorySnapshot


def read_memory() -> MemorySnapshot:
    virtual = psutil.virtual_memory()
    swap = psutil.swap_memory()
    return MemorySnapshot(
        total_bytes=int(virtual.total),
        available_bytes=int(virtual.available),
        used_bytes=int(virtual.total - virtual.available),
        swap_total_bytes=int(swap.total),
        swap_used_bytes=int(swap.used),
    )
