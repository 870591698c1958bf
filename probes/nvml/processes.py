"""The processes on a GPU, as every driver generation can tell them.

nvidia-ml-py calls the `_v3` process queries, which drivers before R510 lack (R470 is still common on
clusters): there its unversioned call raises NVMLLibraryMismatchError. So each list is asked of `_v3`, then
`_v2`, then the unversioned v1 symbol (whose struct has only pid and memory), and the first that exists is kept
for the session. A process with both a compute and a graphics context (C+G) is in both lists: it is one
process, counted once. Per-process utilization samples come back in no promised order and sometimes older
than asked for: keep only those newer than the last seen, newest per pid, and clamp to 0-100.
"""

from __future__ import annotations

import ctypes
from typing import Any

import msgspec

from hwtop.probes.nvml.calls import FUNCTION_NOT_FOUND, INSUFFICIENT_SIZE

NOT_AVAILABLE = 0xFFFFFFFFFFFFFFFF  # NVML_VALUE_NOT_AVAILABLE as unsigned long long (WDDM, some containers)
VERSIONS = ("_v3", "_v2", "")
FIRST_SAMPLES_WINDOW_US = 5_000_000  # on the first read, samples older than this before the newest are history


class Listed(msgspec.Struct, frozen=True):
    pid: int
    used_memory_bytes: int | None
    kinds: tuple[str, ...]  # ("compute",), ("graphics",) or both


class _ProcessInfoV1(ctypes.Structure):
    """nvml.h nvmlProcessInfo_v1_t: what the unversioned nvmlDevice*RunningProcesses fill."""

    _fields_ = [("pid", ctypes.c_uint), ("usedGpuMemory", ctypes.c_ulonglong)]


def symbol(kind: str, version: str) -> str:
    return f"nvmlDeviceGet{'Compute' if kind == 'compute' else 'Graphics'}RunningProcesses{version}"


def call_version(nvml: Any, handle: Any, kind: str, version: str) -> list[tuple[int, int | None]]:
    """(pid, memory) of one process query version; raises the bindings' NVMLError as they would."""
    name = symbol(kind, version)
    if version:
        entries = getattr(nvml, name)(handle)
        return [(int(e.pid), _memory(e.usedGpuMemory)) for e in entries]
    return _call_v1(nvml, handle, name)


def _call_v1(nvml: Any, handle: Any, name: str) -> list[tuple[int, int | None]]:
    """The unversioned symbol, which nvidia-ml-py no longer wraps: NVML's size-then-fill protocol by hand."""
    function = nvml._nvmlGetFunctionPointer(name)  # raises NVMLError(FUNCTION_NOT_FOUND) if absent
    for _ in range(2):  # a process can start between the size query and the fill: ask once more
        count = ctypes.c_uint(0)
        code = function(handle, ctypes.byref(count), None)
        if code == 0:
            return []
        if code != INSUFFICIENT_SIZE:
            raise nvml.NVMLError(code)
        count.value = count.value * 2 + 5
        array = (_ProcessInfoV1 * count.value)()
        code = function(handle, ctypes.byref(count), array)
        if code == 0:
            return [(int(array[i].pid), _memory(array[i].usedGpuMemory)) for i in range(count.value)]
        if code != INSUFFICIENT_SIZE:
            raise nvml.NVMLError(code)
    raise nvml.NVMLError(INSUFFICIENT_SIZE)


def _memory(value: Any) -> int | None:
    return None if value is None or int(value) == NOT_AVAILABLE else int(value)


def is_absent(code: int | None) -> bool:
    return code == FUNCTION_NOT_FOUND


def merge(compute: list[tuple[int, int | None]], graphics: list[tuple[int, int | None]]) -> list[Listed]:
    """One entry per pid: a C+G process appears in both lists with the same memory, and is counted once."""
    kinds: dict[int, list[str]] = {}
    memory: dict[int, int | None] = {}
    for kind, entries in (("compute", compute), ("graphics", graphics)):
        for pid, used in entries:
            if kind not in kinds.setdefault(pid, []):
                kinds[pid].append(kind)
            known = memory.get(pid)
            memory[pid] = used if known is None else max(known, used or 0)
    return [Listed(pid, memory[pid], tuple(k)) for pid, k in kinds.items()]


def clamp_percent(value: int) -> float:
    return float(min(100, max(0, int(value))))


def pick_samples(samples: list[Any], last_seen_us: int) -> tuple[dict[int, tuple[float, float]], int]:
    """({pid: (sm %, memory %)} from the newest sample of each pid newer than `last_seen_us`, the newest
    timestamp seen). On the first read (last_seen 0) the driver returns its whole buffer: only the last few
    seconds of it describe now."""
    fresh = sorted((s for s in samples if int(s.timeStamp) > last_seen_us), key=lambda s: int(s.timeStamp))
    if not fresh:
        return {}, last_seen_us
    newest = int(fresh[-1].timeStamp)
    if last_seen_us == 0:
        fresh = [s for s in fresh if int(s.timeStamp) >= newest - FIRST_SAMPLES_WINDOW_US]
    latest = {int(s.pid): (clamp_percent(s.smUtil), clamp_percent(s.memUtil)) for s in fresh}
    return latest, newest
