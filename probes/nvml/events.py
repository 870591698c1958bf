"""NVML's critical-XID events: the driver's error reports (Xid 48 a double-bit ECC error, 79 a GPU fallen off the
bus, 94/95 contained or uncontained memory errors), which dcgm-exporter publishes as DCGM_FI_DEV_XID_ERRORS.

One event set for every GPU, drained without waiting (timeout 0) once a tick. A GPU whose driver cannot report
XIDs (NOT_SUPPORTED, some virtualised GPUs) is simply not registered; if the event set itself fails, XIDs are
not watched again until NVML is opened afresh. Nothing here raises."""

from __future__ import annotations

import ctypes
import types
from collections import Counter
from typing import Any

MAX_EVENTS_PER_TICK = 64  # a storm of XIDs is drained over several ticks, never in one long loop


def _address(handle: Any) -> int | None:
    try:
        return ctypes.cast(handle, ctypes.c_void_p).value
    except (TypeError, ctypes.ArgumentError):
        return None


class XidWatcher:
    def __init__(self, nvml: types.ModuleType, calls: Counter[str]) -> None:
        self._nvml = nvml
        self._calls = calls
        self._set: Any = None
        self._index_of: dict[int, int] = {}  # handle address -> GPU index
        self._last: dict[int, int] = {}  # GPU index -> last XID seen (0: none since hwtop started watching)

    def start(self, devices: list[tuple[int, Any]]) -> None:
        nvml = self._nvml
        self._calls["nvmlEventSetCreate"] += 1
        try:
            self._set = nvml.nvmlEventSetCreate()
        except Exception:  # noqa: BLE001 - no events on this driver: XID stays unknown
            self._set = None
            return
        for index, handle in devices:
            self.register(index, handle)
        if not self._index_of:
            self.close()

    def register(self, index: int, handle: Any) -> None:
        """Watch one GPU (again, after a reset gave it a new handle)."""
        address = _address(handle)
        if self._set is None or address is None:
            return
        self._calls["nvmlDeviceRegisterEvents"] += 1
        try:
            self._nvml.nvmlDeviceRegisterEvents(handle, self._nvml.nvmlEventTypeXidCriticalError, self._set)
        except Exception:  # noqa: BLE001 - NOT_SUPPORTED on this GPU: its XID stays unknown
            return
        self._index_of = {a: i for a, i in self._index_of.items() if i != index}
        self._index_of[address] = index
        self._last.setdefault(index, 0)

    def drain(self) -> None:
        if self._set is None:
            return
        nvml = self._nvml
        for _ in range(MAX_EVENTS_PER_TICK):
            self._calls["nvmlEventSetWait_v2"] += 1
            try:
                data = nvml.nvmlEventSetWait_v2(self._set, 0)
            except nvml.NVMLError_Timeout:
                return  # no event pending: the usual answer
            except Exception:  # noqa: BLE001 - the set broke: stop watching rather than fail every tick
                self.close()
                return
            address = _address(data.device)
            index = self._index_of.get(address) if address is not None else None
            if index is not None and int(data.eventType) & nvml.nvmlEventTypeXidCriticalError:
                self._last[index] = int(data.eventData)

    def last_xid(self, index: int) -> int | None:
        """The last XID this GPU reported, 0 for none, None where it is not watched."""
        return self._last.get(index) if self._set is not None else None

    def close(self) -> None:
        if self._set is not None:
            self._calls["nvmlEventSetFree"] += 1
            try:
                self._nvml.nvmlEventSetFree(self._set)
            except Exception:  # noqa: BLE001 - closing: nothing left to do with it
                pass
        self._set = None
        self._index_of.clear()
        self._last.clear()
