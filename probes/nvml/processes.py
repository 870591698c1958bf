"""The processes on a GPU, as every driver generation can tell them.

nvidia-ml-py calls the `_v3` process queries, which drivers before R510 lack (R470 is still common on
clusters): there its unversioned call raises NVMLLibraryMismatchError. So each list is asked of `_v3`, then
`_v2`, then the unversioned v1 symbol (whose struct has only pid and memory), and the first that exists is kept
for the session. A process with both a compute and a graphics context (C+G) is in both lists: it is one
process, counted once. Per-process utilization samples come back in no promised order and sometimes older
than asked for: keep only those newer than the last seen, newest per pid, and clamp to 0-100. A pid that is
not a process here (in a container NVML names host pids) is shown as not visible, and the local processes that
hold the GPU's device file (probes/nvml/holders.py) are listed beside it.
"""

from __future__ import annotations

import ctypes
import os
from typing import Any

import msgspec

from hwtop.model.snapshot import GpuProcess, GpuProcessKind, ProcessInfo
from hwtop.probes.nvml.calls import INSUFFICIENT_SIZE, Verdict, error_code, verdict
from hwtop.probes.nvml.capabilities import Query
from hwtop.probes.nvml.handle import DeviceHandle
from hwtop.probes.nvml.holders import Holders, cmdline
from hwtop.probes.owners import OwnerReader

NOT_AVAILABLE = 0xFFFFFFFFFFFFFFFF  # NVML_VALUE_NOT_AVAILABLE as unsigned long long (WDDM, some containers)
VERSIONS = ("_v3", "_v2", "")
FIRST_SAMPLES_WINDOW_US = 5_000_000  # on the first read, samples older than this before the newest are history


class Listed(msgspec.Struct, frozen=True):
    pid: int
    used_memory_bytes: int | None
    kinds: tuple[GpuProcessKind, ...]  # ("compute",), ("graphics",) or both


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


def merge(compute: list[tuple[int, int | None]], graphics: list[tuple[int, int | None]]) -> list[Listed]:
    """One entry per pid: a C+G process appears in both lists with the same memory, and is counted once."""
    kinds: dict[int, list[GpuProcessKind]] = {}
    memory: dict[int, int | None] = {}
    lists: tuple[tuple[GpuProcessKind, list[tuple[int, int | None]]], ...] = (("compute", compute),
                                                                            ("graphics", graphics))
    for kind, entries in lists:
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


class ProcessReader:
    """One GPU's processes: its compute and graphics lists, their utilization samples, and who they are here."""

    def __init__(self, gpu: DeviceHandle, holders: Holders) -> None:
        self._gpu = gpu
        self._holders = holders
        self._last_sample_us = 0  # the newest utilization sample seen
        self._owners = OwnerReader(holders.proc_root)  # for a GPU process the host table did not list

    def read(self, by_pid: dict[int, ProcessInfo], minor: int | None) -> tuple[tuple[GpuProcess, ...], str | None]:
        """(the processes, why some cannot be shown or None); `minor` is the GPU's /dev/nvidiaN."""
        gpu = self._gpu
        compute, compute_error = self._running("compute")
        graphics, graphics_error = self._running("graphics")
        listed = merge(compute, graphics)
        utilization: dict[int, tuple[float, float]] = {}
        if listed:
            samples = gpu.call(Query.PROC_UTIL, "nvmlDeviceGetProcessUtilization", self._last_sample_us)
            if samples:
                utilization, self._last_sample_us = pick_samples(list(samples), self._last_sample_us)
        result = [self._process(entry, minor, by_pid, utilization.get(entry.pid)) for entry in listed]
        listed_pids = {entry.pid for entry in listed}
        self._owners.retain(lambda pid, _start: pid in listed_pids)
        hidden = sum(not p.visible for p in result)
        if Verdict.DENIED in (compute_error, graphics_error):
            return tuple(result), "process list: no permission (NVML NO_PERMISSION)"
        if hidden and gpu.session.source.startswith("demo"):
            return tuple(result), "demo profile: its GPU processes are not processes of this host"
        if not hidden:
            return tuple(result), None
        status = (f"{hidden} GPU process(es) not visible here: NVML reports host pids (container?); "
                  "pid mapping unavailable")
        local = self._holders.by_minor().get(minor, ()) if minor is not None else ()
        shown = {p.pid for p in result}
        proc_root = self._holders.proc_root
        for pid in local:
            if pid in shown:
                continue
            host = by_pid.get(pid)
            result.append(GpuProcess(pid=pid, kind="holder", used_memory_bytes=None, visible=True,
                                     user=host.user if host else None,
                                     command=(host.cmdline or host.name) if host else cmdline(proc_root, pid),
                                     cpu_percent=host.cpu_percent if host else None,
                                     rss_bytes=host.rss_bytes if host else None))
        if local:
            status += f"; local processes holding /dev/nvidia{minor}: {', '.join(map(str, local))}"
        return tuple(result), status

    def _running(self, kind: str) -> tuple[list[tuple[int, int | None]], Verdict | None]:
        """One process list, from the newest query version this driver has (v3, v2, then v1)."""
        gpu = self._gpu
        session = gpu.session
        query = Query.PROCS_COMPUTE if kind == "compute" else Query.PROCS_GRAPHICS
        if gpu.caps.skip(query, session.now):
            return [], None
        while session.process_version[kind] < len(VERSIONS):
            version = VERSIONS[session.process_version[kind]]
            for attempt in range(2):
                session.calls[symbol(kind, version)] += 1
                try:
                    entries = call_version(session.nvml, gpu.handle, kind, version)
                except Exception as error:  # noqa: BLE001
                    code = error_code(error)
                    if code == INSUFFICIENT_SIZE and attempt == 0:
                        continue  # processes started between the size query and the fill
                    if verdict(code) is Verdict.ABSENT:
                        break
                    gpu.failed(query, error)
                    return [], verdict(code)
                gpu.caps.succeeded(query)
                return entries, None
            session.process_version[kind] += 1  # this driver has no such version: the next older one
        gpu.caps.missing(query)
        return [], Verdict.ABSENT

    def _process(self, entry: Listed, minor: int | None, by_pid: dict[int, ProcessInfo],
                 sample: tuple[float, float] | None) -> GpuProcess:
        pid = entry.pid
        host = by_pid.get(pid)
        proc_root = self._holders.proc_root
        visible = host is not None or os.path.exists(f"{proc_root}/{pid}")
        demo = self._gpu.session.source.startswith("demo")  # its pids are not this host's processes
        if visible and minor is not None and not demo:
            # A pid of ours that does not hold this GPU's device file is another process (container pid
            # namespace): not the one NVML means.
            held = self._holders.minors_held(pid)
            visible = held is None or minor in held
            host = host if visible else None
        command = (host.cmdline or host.name) if host else (cmdline(proc_root, pid) if visible else None)
        return GpuProcess(
            pid=pid, kind="compute" if "compute" in entry.kinds else entry.kinds[0], kinds=entry.kinds,
            used_memory_bytes=entry.used_memory_bytes,
            sm_percent=None if sample is None else sample[0],
            mem_percent=None if sample is None else sample[1],
            visible=visible,
            user=host.user if host else None,
            command=command,
            cpu_percent=host.cpu_percent if host else None,
            rss_bytes=host.rss_bytes if host else None,
            owner=host.owner if host else (self._owners.owner_of_pid(pid) if visible and not demo else None),
        )
