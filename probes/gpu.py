"""GPUs through NVML: nvidia-ml-py's `pynvml` on this machine's libnvidia-ml.so.1 (or, for demos and tests, the
same bindings on a fake of that library: demo/nvml).

`NvmlProbe` is what the sampler, the exporter, `hwtop record` and `hwtop topo` hold: it opens the session
(probes/nvml/session.py), keeps one reader per GPU (probes/nvml/device.py: static facts once, MIG mode every tick,
the slow tier every SLOW_TIER_S, live values every tick; traffic in pcie.py, GPM in gpm.py, processes in
processes.py), looks a lost GPU up again every LOST_RETRY_S, drains the XID events, and reopens NVML when it stops
answering. What each error means is probes/nvml/calls.py's: NOT_SUPPORTED is asked again later or on a state
change, a GPU is lost only when a fresh handle lookup agrees, and a failed nvmlInit is retried. Nothing here
raises out of `read`.
"""

from __future__ import annotations

import threading
import time
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hwtop.model.snapshot import GpuSnapshot, GpuSystem, ProcessInfo, Topology
from hwtop.probes.nvml.calls import GpuLost, SessionGone, Verdict, error_code, verdict
from hwtop.probes.nvml.session import LOST_RETRY_S, NvmlSession

if TYPE_CHECKING:
    from hwtop.probes.nvml.device import DeviceReader
    from hwtop.probes.nvml.events import XidWatcher
    from hwtop.probes.nvml.holders import Holders
    from hwtop.probes.nvml.slow import BackgroundCalls

CLOSE_WAIT_S = 5.0  # how long close waits for a read in flight before it leaves NVML to the process's exit


class NvmlProbe:
    def __init__(
        self,
        nvml: types.ModuleType | None = None,
        proc_root: str = "/proc",
        source: str = "nvml",
        clock: Callable[[], float] = time.monotonic,
        background: BackgroundCalls | None = None,
    ) -> None:
        self.proc_root = proc_root
        self.source = source
        self._clock = clock
        self._session = NvmlSession(nvml, source, clock)
        # The readers' parts (and their modules) are made when NVML first opens: a box without the library never
        # loads them, and a box with GPUs loads them on its first read rather than at the start.
        self._given_background = background
        self._parts: tuple[BackgroundCalls, Holders] | None = None
        self._devices: list[DeviceReader] = []
        self._xids: XidWatcher | None = None
        self.calls = self._session.calls  # NVML calls made, by function: what a tick costs
        self._closed = False  # close() is final: a tick after it must not open NVML again
        self._reading = threading.Lock()  # held by a read, so that close waits for it

    @property
    def nvml(self) -> types.ModuleType:
        return self._session.nvml

    # ----- lifecycle -----

    def _reader_parts(self) -> tuple[BackgroundCalls, Holders]:
        """The slow calls' thread and the holders of /dev/nvidiaN, shared by every GPU's reader."""
        if self._parts is None:
            from hwtop.probes.nvml.holders import Holders
            from hwtop.probes.nvml.slow import BackgroundCalls

            self._parts = (self._given_background or BackgroundCalls(), Holders(self.proc_root, self._clock))
        return self._parts

    @property
    def _background(self) -> BackgroundCalls:
        return self._reader_parts()[0]

    def _open(self, now: float) -> GpuSystem:
        session = self._session
        system = session.open(now)
        if system.available:
            from hwtop.probes.nvml.events import XidWatcher

            self._devices = [self._first_reader(index, now) for index in range(session.count)]
            self._xids = XidWatcher(session.nvml, session.calls)
            self._xids.start([(d.index, d.handle) for d in self._devices if d.handle is not None])
        return system

    def _first_reader(self, index: int, now: float) -> DeviceReader:
        try:
            handle = self.nvml.nvmlDeviceGetHandleByIndex(index)
        except Exception as error:  # noqa: BLE001
            device = self._reader(index, None)
            device.lost = verdict(error_code(error)) is Verdict.LOST
            device.lost_since = now
            return device
        return self._reader(index, handle)

    def _reader(self, index: int, handle: Any, checked_tick: int = -1) -> DeviceReader:
        from hwtop.probes.nvml.device import DeviceReader

        background, holders = self._reader_parts()
        return DeviceReader(self._session, index, handle, background, holders, checked_tick)

    def _release(self) -> None:
        """Let go of every GPU's buffers and pollers and of the XID events, before NVML is shut down."""
        for device in self._devices:
            device.release()
        if self._xids is not None:
            self._xids.close()
            self._xids = None
        self._devices = []

    def close(self) -> None:
        """After the read in flight, if any: NVML is not shut down under a running call. A read hung in the driver
        for CLOSE_WAIT_S is left to the process's exit, which frees NVML anyway, rather than hang the exit too."""
        self._closed = True
        background = self._parts[0] if self._parts is not None else self._given_background
        if background is not None:
            background.close()
        for device in self._devices:
            device.traffic.stop()
        if not self._reading.acquire(timeout=CLOSE_WAIT_S):
            return
        try:
            session = self._session
            if session.module is not None and session.system is not None and session.system.available:
                self._release()
                session.shutdown()
            self._devices = []
            session.system = None
        finally:
            self._reading.release()

    def _ensure_open(self, now: float) -> GpuSystem:
        if self._closed:
            return GpuSystem(False, "NVML closed: hwtop is shutting down", source=self.source)
        session = self._session
        system = session.system
        if system is None or (not system.available and session.retry_at is not None and now >= session.retry_at):
            system = session.system = self._open(now)
        return system

    # ----- topology -----

    def topology_inputs(self) -> tuple[list[tuple[str, str]], list[tuple[int, tuple[str | None, ...]]]]:
        """(name, bus id) and NVLink state per GPU, for probes.topology; read once, on the sampler's thread."""
        from hwtop.probes.topology import count_nvlinks

        if not self._ensure_open(self._clock()).available:
            return [], []
        gpus, links = [], []
        for device in self._devices:
            if device.handle is None:
                continue
            try:
                static = device.static_facts()
            except (GpuLost, SessionGone):
                continue
            gpus.append((f"GPU{device.index}", static.pci_bus_id or ""))
            links.append(count_nvlinks(self.nvml, device.handle))
        return gpus, links

    def machine_topology(self, root: str = "/") -> Topology:
        """This machine's topology: the sysfs tree under `root`, NVLink state, and NVML's cross-check."""
        from hwtop.probes.numa import NumaProbe
        from hwtop.probes.topology import read_topology

        return read_topology(root, *self.topology_inputs(), numa=NumaProbe(root).read(),
                             nvml_relations=self.common_ancestors())

    def common_ancestors(self) -> dict[tuple[int, int], str]:
        """NVML's own PCIe relation for each GPU pair (nvmlDeviceGetTopologyCommonAncestor), where it has one."""
        from hwtop.probes.topology import NVML_LEVELS

        relations: dict[tuple[int, int], str] = {}
        if not self._ensure_open(self._clock()).available:
            return relations
        devices = [d for d in self._devices if d.handle is not None]
        for a in devices:
            for b in devices:
                if a.index >= b.index:
                    continue
                self.calls["nvmlDeviceGetTopologyCommonAncestor"] += 1
                try:
                    level = self.nvml.nvmlDeviceGetTopologyCommonAncestor(a.handle, b.handle)
                except Exception:  # noqa: BLE001 - unsupported here: the sysfs tree is the only source
                    return relations
                if level in NVML_LEVELS:
                    relations[(a.index, b.index)] = relations[(b.index, a.index)] = NVML_LEVELS[level]
        return relations

    # ----- reading -----

    def read(self, processes: tuple[ProcessInfo, ...] = ()) -> tuple[GpuSystem, tuple[GpuSnapshot, ...]]:
        with self._reading:
            return self._read(processes)

    def _read(self, processes: tuple[ProcessInfo, ...]) -> tuple[GpuSystem, tuple[GpuSnapshot, ...]]:
        now = self._session.begin_tick()
        system = self._ensure_open(now)
        if not system.available:
            return system, ()
        by_pid = {p.pid: p for p in processes}
        if self._xids is not None:
            self._xids.drain()
        gpus = []
        try:
            for position, device in enumerate(self._devices):
                gpus.append(self._read_one(position, device, now, by_pid))
        except SessionGone as error:
            self._release()
            return self._session.drop(str(error), now), ()
        return system, tuple(gpus)

    def _read_one(self, position: int, device: DeviceReader, now: float,
                  by_pid: dict[int, ProcessInfo]) -> GpuSnapshot:
        if device.lost or device.handle is None:
            back = None if now - device.lost_since < LOST_RETRY_S else self._reacquire(device, now)
            if back is None:
                return device.unread()
            device = self._devices[position] = back
        try:
            return device.read(now, by_pid, None if self._xids is None else self._xids.last_xid(device.index))
        except GpuLost:
            device.lost, device.lost_since = True, now
            device.release()
            return device.unread()

    def _reacquire(self, device: DeviceReader, now: float) -> DeviceReader | None:
        """Look a lost (or never found) GPU up again; back, it starts afresh with a new reader: it may have been
        reset."""
        session = self._session
        session.calls["nvmlDeviceGetHandleByIndex"] += 1
        try:
            handle = session.nvml.nvmlDeviceGetHandleByIndex(device.index)
        except Exception as error:  # noqa: BLE001
            if verdict(error_code(error)) is Verdict.SESSION:
                raise SessionGone(str(error)) from error
            device.lost_since = now
            return None
        device.release()
        if self._xids is not None:
            self._xids.register(device.index, handle)
        return self._reader(device.index, handle, checked_tick=session.tick)


__all__ = ["CLOSE_WAIT_S", "NvmlProbe"]
