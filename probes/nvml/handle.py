"""One GPU's handle and the one guarded way to ask it something: a query its Capabilities say to skip is not
asked; an error is judged (probes/nvml/calls.py) and remembered; the GPU is lost only when a fresh handle lookup
agrees (GpuLost), and a session gone raises SessionGone. Every reader of a GPU's values asks through this."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hwtop.probes.nvml.calls import GpuLost, SessionGone, Verdict, error_code, verdict
from hwtop.probes.nvml.capabilities import Capabilities, Query
from hwtop.probes.nvml.session import NvmlSession


class DeviceHandle:
    def __init__(self, session: NvmlSession, index: int, handle: Any, checked_tick: int = -1) -> None:
        self.session = session
        self.index = index
        self.handle = handle
        self.caps = Capabilities()
        self.checked_tick = checked_tick  # the tick a handle lookup last said this GPU is on the bus
        self.state_changed = False  # a query that used to work stopped: read the slow tier now

    def call(self, query: Query, function: str, *args: Any, handle: Any = None,
             how: Callable[..., Any] | None = None) -> Any:
        """nvml.<function>(handle, *args), or None when it cannot answer now; `how(handle, *args)` in its place where
        given (the same C function asked another way, counted under its name). Raises GpuLost once a fresh handle
        lookup confirms the GPU is gone, SessionGone if NVML is."""
        session = self.session
        if self.caps.skip(query, session.now):
            return None
        session.calls[function] += 1
        try:
            value = (how or getattr(session.nvml, function))(self.handle if handle is None else handle, *args)
        except Exception as error:  # noqa: BLE001 - NVMLError, the bindings' mismatch error, AttributeError
            self.failed(query, error)
            return None
        self.caps.succeeded(query)
        return value

    def failed(self, query: Query, error: BaseException) -> None:
        kind = verdict(error_code(error))
        if kind is Verdict.ABSENT:
            self.caps.missing(query)
        elif kind is Verdict.UNSUPPORTED:
            if self.caps.unsupported(query, self.session.now):
                self.state_changed = True
        elif kind is Verdict.LOST:
            self.confirm_lost()
        elif kind is Verdict.SESSION:
            raise SessionGone(str(error))

    def confirm_lost(self) -> None:
        """A call said GPU_IS_LOST (or RESET_REQUIRED): believe it only if looking the GPU up again says so."""
        session = self.session
        if self.checked_tick == session.tick:
            return
        session.calls["nvmlDeviceGetHandleByIndex"] += 1
        try:
            handle = session.nvml.nvmlDeviceGetHandleByIndex(self.index)
        except Exception as error:  # noqa: BLE001
            kind = verdict(error_code(error))
            if kind is Verdict.LOST:
                raise GpuLost(str(error)) from error
            if kind is Verdict.SESSION:
                raise SessionGone(str(error)) from error
            return
        self.handle = handle
        self.checked_tick = session.tick
