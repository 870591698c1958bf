"""A recording view of the NVML bindings: every nvml* call made through it, with its arguments, its result or
error and how long it took, as JSON-ready dicts.

Wrap the module the probe is given (`NvmlProbe(RecordingNvml(pynvml, sink))`): the probe runs unchanged and
the sink receives one record per call. Handles are named by the GPU index they were obtained for (and MIG
handles by GPU and slot), structs by their fields, so a recording made on one machine reads the same on another.
"""

from __future__ import annotations

import ctypes
import threading
import time
import types
from collections.abc import Callable
from typing import Any

from hwtop.probes.nvml.calls import error_code

Sink = Callable[[dict[str, Any]], None]
MAX_ITEMS = 64  # arrays longer than this (GPM's 477-slot metric table) are cut to what was filled


class RecordingNvml(types.ModuleType):
    def __init__(self, nvml: types.ModuleType, sink: Sink, clock: Callable[[], float] = time.perf_counter) -> None:
        super().__init__(f"recording:{nvml.__name__}")
        self._nvml = nvml
        self._sink = sink
        self._clock = clock
        self._names: dict[int, str] = {}  # handle / sample address -> a stable name
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._nvml, name)
        if name.startswith("nvml") and callable(value) and not isinstance(value, type):
            return self._wrap(name, value)
        return value

    def _wrap(self, name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any) -> Any:
            described = [self.describe(a) for a in args]
            started = self._clock()
            try:
                result = function(*args)
            except Exception as error:
                self._emit(name, described, None, error, started)
                raise
            self._remember(name, args, result)
            self._emit(name, described, result, None, started)
            return result

        return call

    def _emit(self, name: str, args: list[Any], result: Any, error: BaseException | None, started: float) -> None:
        record = {"t": time.time(), "call": name, "args": args,
                  "latency_us": round((self._clock() - started) * 1e6, 1),
                  "thread": threading.current_thread().name}
        if error is None:
            record["result"] = self.describe(result)
        else:
            record["error"] = {"code": error_code(error), "type": type(error).__name__, "text": str(error)}
        with self._lock:
            self._sink(record)

    def _remember(self, name: str, args: tuple[Any, ...], result: Any) -> None:
        address = _address(result)
        if address is None:
            return
        if name == "nvmlDeviceGetHandleByIndex":
            self._names[address] = f"gpu{args[0]}"
        elif name == "nvmlDeviceGetMigDeviceHandleByIndex":
            self._names[address] = f"{self._names.get(_address(args[0]) or 0, 'gpu?')}/mig{args[1]}"
        elif name == "nvmlGpmSampleAlloc":
            self._names[address] = f"gpm_sample{len(self._names)}"

    def describe(self, value: Any, depth: int = 0) -> Any:
        """A JSON-ready picture of an argument or result."""
        if value is None or isinstance(value, bool | int | float | str):
            return value
        if isinstance(value, bytes):
            return value.decode(errors="replace")
        if depth > 4:
            return repr(value)
        if isinstance(value, ctypes._Pointer):  # noqa: SLF001 - handles and GPM samples are pointers
            address = _address(value)
            return {"handle": self._names.get(address or 0, "null" if not address else "unnamed")}
        if isinstance(value, ctypes.Structure | ctypes.Union):
            fields = [f[0] for f in value._fields_]  # noqa: SLF001
            if isinstance(value, ctypes.Union):  # say which member holds it where the struct says (valueType)
                return {name: self.describe(getattr(value, name), depth + 1) for name in fields}
            out = {name: self.describe(getattr(value, name), depth + 1) for name in fields}
            if "numMetrics" in out and isinstance(out.get("metrics"), list):
                out["metrics"] = out["metrics"][: int(out["numMetrics"])]
            return out
        if isinstance(value, ctypes.Array | list | tuple):
            return [self.describe(item, depth + 1) for item in list(value)[:MAX_ITEMS]]
        if hasattr(value, "__dict__"):  # nvidia-ml-py's nvmlFriendlyObject (process lists)
            return {k: self.describe(v, depth + 1) for k, v in vars(value).items()}
        return repr(value)


def _address(value: Any) -> int | None:
    if isinstance(value, ctypes._Pointer):  # noqa: SLF001
        return ctypes.cast(value, ctypes.c_void_p).value
    return None
