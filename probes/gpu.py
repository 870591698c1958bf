"""GPUs through NVML: nvidia-ml-py's `pynvml` on this machine's libnvidia-ml.so.1 (or, for demos and tests, the
same bindings on a fake of that library: demo/nvml).

Calls are tiered. Static facts once (and again after a reset); MIG mode every tick (what utilization means
depends on it); power limit, ECC, energy, PCIe replays, MIG slices and NVLink link states every SLOW_TIER_S;
live values every tick, with every NVLink link's byte counter (and, from R555, the PCIe byte counters) in one
`nvmlDeviceGetFieldValues` call, read as counters. nvmlDeviceGetPcieThroughput, which blocks for 20 ms, only
runs on a background thread (probes/nvml/slow.py): for drivers before R555, and to see a burst of traffic on
32-bit PCIe counters (R580 answers them so), which probes/nvml/pcie_wide.py widens. What each error means is
probes/nvml/calls.py's: NOT_SUPPORTED is asked again later or on a state change, a GPU is lost only when a fresh
handle lookup agrees, and a failed nvmlInit is retried. Nothing here raises out of `read`.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import types
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec

from hwtop.model.snapshot import (
    EccCounts,
    GpmMetrics,
    GpuProcess,
    GpuSnapshot,
    GpuSystem,
    MigInstance,
    PcieLink,
    ProcessInfo,
    Topology,
)
from hwtop.probes.nvml.calls import (
    DRIVER_NOT_LOADED,
    INSUFFICIENT_SIZE,
    LIBRARY_NOT_FOUND,
    NOT_SUPPORTED,
    GpuLost,
    SessionGone,
    Verdict,
    error_code,
    verdict,
)
from hwtop.probes.nvml.capabilities import Capabilities, Query
from hwtop.probes.nvml.counters import CounterRates, field_number
from hwtop.probes.nvml.events import XidWatcher
from hwtop.probes.nvml.processes import VERSIONS, Listed, call_version, merge, pick_samples, symbol
from hwtop.probes.nvml.slow import BackgroundCalls

if TYPE_CHECKING:  # imported on the first 32-bit PCIe reading: a CPU-only box's start never needs them
    from hwtop.probes.nvml.pcie_wide import CounterPoller, WideCounters

SLOW_TIER_S = 5.0
CLOSE_WAIT_S = 5.0  # how long close waits for a read in flight before it leaves NVML to the process's exit
LOST_RETRY_S = 5.0
INIT_RETRY_S = 10.0
PCIE_FIELDS_FROM_DRIVER = 555  # NVML_FI_DEV_PCIE_COUNT_TX/RX_BYTES answer from this branch on
NVLINK_TX, NVLINK_RX = 138, 139  # NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX/RX: KiB, per link (scopeId = link)
PCIE_TX, PCIE_RX = 197, 198  # NVML_FI_DEV_PCIE_COUNT_TX/RX_BYTES: bytes
MAX_NVLINKS = 18
GPM_METRICS = (2, 3, 5, 10)  # SM util, SM occupancy, any tensor util, DRAM bandwidth util (nvmlGpmMetricId_t)
PSTATE_UNKNOWN = 32

THROTTLE_NAMES = (
    (0x1, "idle"),
    (0x2, "app clocks"),
    (0x4, "power cap"),
    (0x8, "HW slowdown"),
    (0x10, "sync boost"),
    (0x20, "SW thermal"),
    (0x40, "HW thermal"),
    (0x80, "power brake"),
    (0x100, "display clock"),
)


def decode_throttle_reasons(mask: int) -> tuple[str, ...]:
    return tuple(name for bit, name in THROTTLE_NAMES if mask & bit)


def driver_major(version: str | None) -> int | None:
    try:
        return int((version or "").split(".")[0])
    except ValueError:
        return None


class StaticFacts(msgspec.Struct):
    name: str | None = None
    uuid: str | None = None
    pci_bus_id: str | None = None
    compute_capability: tuple[int, int] | None = None
    sm_max_mhz: float | None = None
    mem_max_mhz: float | None = None
    pcie_max_gen: int | None = None
    pcie_max_width: int | None = None
    minor: int | None = None
    gpm_supported: bool = False
    gpm_status: str | None = None


class SlowFacts(msgspec.Struct):
    power_limit_mw: int | None = None
    ecc: EccCounts | None = None
    ecc_enabled: bool | None = None
    mig: tuple[MigInstance, ...] = ()
    energy_mj: int | None = None  # since the driver loaded (Volta and newer)
    pcie_replays: int | None = None  # since the driver loaded


class GpmState(msgspec.Struct):
    samples: list[Any] = msgspec.field(default_factory=list)  # two nvmlGpmSample_t buffers while allocated
    primed: bool = False  # samples[0] holds a reading to diff against
    retry_at: float = float("-inf")
    status: str | None = None


class _Device(msgspec.Struct):
    index: int
    handle: Any
    caps: Capabilities = msgspec.field(default_factory=Capabilities)
    lost: bool = False
    lost_since: float = 0.0
    static: StaticFacts | None = None
    slow: SlowFacts = msgspec.field(default_factory=SlowFacts)
    slow_at: float = float("-inf")
    state_changed: bool = False  # a query that used to work stopped: read the slow tier now
    mig: bool | None = None
    ecc_mode: bool | None = None
    nvlinks: tuple[int, ...] = ()  # active link indexes
    gpm: GpmState = msgspec.field(default_factory=GpmState)
    last_sample_us: int = 0
    checked_tick: int = -1  # the tick a handle lookup last said this GPU is on the bus
    pcie_wide: WideCounters | None = None  # 32-bit PCIe byte counters, widened (probes/nvml/pcie_wide.py)
    pcie_poller: CounterPoller | None = None


def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


NVML_LIBRARY = "libnvidia-ml.so.1"  # what nvidia-ml-py's loader opens on Linux
NO_LIBRARY = f"no NVIDIA driver / NVML not found ({NVML_LIBRARY}): running CPU-only"


def nvml_library_loads() -> bool:
    """Whether the library nvidia-ml-py would load can be loaded: asked before the bindings are imported, so a
    CPU-only box never imports them. Elsewhere than Linux the bindings' own loader is left to decide."""
    if not sys.platform.startswith("linux"):
        return True
    import ctypes

    try:
        ctypes.CDLL(NVML_LIBRARY)
    except OSError:
        return False
    return True


class NvmlProbe:
    def __init__(
        self,
        nvml: types.ModuleType | None = None,
        proc_root: str = "/proc",
        source: str = "nvml",
        clock: Callable[[], float] = time.monotonic,
        background: BackgroundCalls | None = None,
    ) -> None:
        self._nvml = nvml
        self.proc_root = proc_root
        self.source = source
        self._clock = clock
        self._background = background or BackgroundCalls()
        self._devices: list[_Device] = []
        self._system: GpuSystem | None = None
        self._retry_at: float | None = None
        self._pcie_fields = False
        self._process_version = {"compute": 0, "graphics": 0}
        self._rates = CounterRates()
        self._now = 0.0
        self._tick = 0
        self.calls: Counter[str] = Counter()  # NVML calls made, by function: what a tick costs
        self._holders: dict[int, tuple[int, ...]] = {}  # /dev/nvidiaN minor -> local pids holding it
        self._holders_at = -1e9
        self._minors_cache: dict[int, tuple[float, set[int] | None]] = {}
        self._xids: XidWatcher | None = None
        self._closed = False  # close() is final: a tick after it must not open NVML again
        self._reading = threading.Lock()  # held by a read, so that close waits for it

    @property
    def nvml(self) -> types.ModuleType:
        if self._nvml is None:
            raise RuntimeError("NVML is not open")
        return self._nvml

    # ----- lifecycle -----

    def _open(self, now: float) -> GpuSystem:
        self._retry_at = now + INIT_RETRY_S
        retry = f"; retrying every {INIT_RETRY_S:g} s"
        if self._nvml is None:
            if not nvml_library_loads():
                return GpuSystem(False, NO_LIBRARY + retry, source="none")
            try:
                import pynvml  # lazy, and only where the library loads: ~10 ms of a CPU-only box's first frame
            except ImportError:
                self._retry_at = None
                return GpuSystem(False, "nvidia-ml-py is not installed: no GPU monitoring", source="none")
            self._nvml = pynvml
        nvml = self._nvml
        self.calls["nvmlInit"] += 1
        try:
            nvml.nvmlInit()
        except Exception as error:  # noqa: BLE001 - NVMLError, or anything the loader raises
            code = error_code(error)
            if code == LIBRARY_NOT_FOUND:
                message = NO_LIBRARY
            elif code == DRIVER_NOT_LOADED:
                message = "NVIDIA driver not loaded (is the kernel module in?): running CPU-only"
            else:
                message = f"NVML failed to start: {error}: running CPU-only"
            return GpuSystem(False, message + retry, source="none")
        driver = self._try(lambda: _text(nvml.nvmlSystemGetDriverVersion()))
        cuda = self._try(nvml.nvmlSystemGetCudaDriverVersion)
        cuda_text = f"{cuda // 1000}.{cuda % 1000 // 10}" if isinstance(cuda, int) else None
        major = driver_major(driver)
        self._pcie_fields = major is None or major >= PCIE_FIELDS_FROM_DRIVER
        self._process_version = {"compute": 0, "graphics": 0}
        try:
            count = int(nvml.nvmlDeviceGetCount())
        except Exception as error:  # noqa: BLE001
            self._shutdown()
            return GpuSystem(False, f"NVML could not count GPUs: {error}{retry}", driver, cuda_text, self.source)
        if count == 0:
            self._shutdown()
            return GpuSystem(False, f"NVIDIA driver loaded but no GPU visible{retry}", driver, cuda_text,
                             self.source)
        self._devices = [self._first_handle(index, now) for index in range(count)]
        self._xids = XidWatcher(nvml, self.calls)
        self._xids.start([(d.index, d.handle) for d in self._devices if d.handle is not None])
        self._retry_at = None
        return GpuSystem(True, None, driver, cuda_text, self.source)

    def _first_handle(self, index: int, now: float) -> _Device:
        device = _Device(index, None)
        try:
            device.handle = self.nvml.nvmlDeviceGetHandleByIndex(index)
        except Exception as error:  # noqa: BLE001
            device.lost = verdict(error_code(error)) is Verdict.LOST
            device.lost_since = now
        return device

    def _try(self, call: Callable[[], Any]) -> Any:
        try:
            return call()
        except Exception:  # noqa: BLE001 - an optional fact
            return None

    def _shutdown(self) -> None:
        for device in self._devices:
            self._free_gpm(device)
            self._stop_pcie(device)
        if self._xids is not None:
            self._xids.close()
            self._xids = None
        if self._nvml is not None:
            self._try(self._nvml.nvmlShutdown)
        self._devices = []

    def _drop_session(self, why: str, now: float) -> None:
        """NVML stopped answering mid-tick: let go of it and open it afresh later."""
        old = self._system or GpuSystem(False)
        self._shutdown()
        self._rates = CounterRates()
        self._retry_at = now + INIT_RETRY_S
        self._system = GpuSystem(False, f"NVML stopped answering ({why}); retrying every {INIT_RETRY_S:g} s",
                                 old.driver_version, old.cuda_driver_version, self.source)

    def close(self) -> None:
        """After the read in flight, if any: NVML is not shut down under a running call. A read hung in the driver
        for CLOSE_WAIT_S is left to the process's exit, which frees NVML anyway, rather than hang the exit too."""
        self._closed = True
        self._background.close()
        for device in self._devices:
            self._stop_pcie(device)
        if not self._reading.acquire(timeout=CLOSE_WAIT_S):
            return
        try:
            if self._nvml is not None and self._system is not None and self._system.available:
                self._shutdown()
            self._devices = []
            self._system = None
        finally:
            self._reading.release()

    def _ensure_open(self, now: float) -> GpuSystem:
        if self._closed:
            return GpuSystem(False, "NVML closed: hwtop is shutting down", source=self.source)
        if self._system is None or (not self._system.available and self._retry_at is not None
                                    and now >= self._retry_at):
            self._system = self._open(now)
        return self._system

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
                static = self._static(device)
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

    # ----- one guarded call -----

    def _call(self, device: _Device, query: Query, function: str, *args: Any, handle: Any = None) -> Any:
        """nvml.<function>(handle, *args), or None when it cannot answer now (see probes/nvml/calls.py).
        Raises GpuLost once a fresh handle lookup confirms the GPU is gone, SessionGone if NVML is."""
        if device.caps.skip(query, self._now):
            return None
        self.calls[function] += 1
        try:
            value = getattr(self.nvml, function)(device.handle if handle is None else handle, *args)
        except Exception as error:  # noqa: BLE001 - NVMLError, the bindings' mismatch error, AttributeError
            self._failed(device, query, error)
            return None
        device.caps.succeeded(query)
        return value

    def _failed(self, device: _Device, query: Query, error: BaseException) -> None:
        kind = verdict(error_code(error))
        if kind is Verdict.ABSENT:
            device.caps.missing(query)
        elif kind is Verdict.UNSUPPORTED:
            if device.caps.unsupported(query, self._now):
                device.state_changed = True
        elif kind is Verdict.LOST:
            self._confirm_lost(device)
        elif kind is Verdict.SESSION:
            raise SessionGone(str(error))

    def _confirm_lost(self, device: _Device) -> None:
        """A call said GPU_IS_LOST (or RESET_REQUIRED): believe it only if looking the GPU up again says so."""
        if device.checked_tick == self._tick:
            return
        self.calls["nvmlDeviceGetHandleByIndex"] += 1
        try:
            handle = self.nvml.nvmlDeviceGetHandleByIndex(device.index)
        except Exception as error:  # noqa: BLE001
            kind = verdict(error_code(error))
            if kind is Verdict.LOST:
                raise GpuLost(str(error)) from error
            if kind is Verdict.SESSION:
                raise SessionGone(str(error)) from error
            return
        device.handle = handle
        device.checked_tick = self._tick

    # ----- reading -----

    def read(self, processes: tuple[ProcessInfo, ...] = ()) -> tuple[GpuSystem, tuple[GpuSnapshot, ...]]:
        with self._reading:
            return self._read(processes)

    def _read(self, processes: tuple[ProcessInfo, ...]) -> tuple[GpuSystem, tuple[GpuSnapshot, ...]]:
        now = self._now = self._clock()
        self._tick += 1
        system = self._ensure_open(now)
        if not system.available:
            return system, ()
        by_pid = {p.pid: p for p in processes}
        if self._xids is not None:
            self._xids.drain()
        gpus = []
        try:
            for device in self._devices:
                gpus.append(self._read_one(device, now, by_pid))
        except SessionGone as error:
            self._drop_session(str(error), now)
            return self._system or system, ()
        return system, tuple(gpus)

    def _read_one(self, device: _Device, now: float, by_pid: dict[int, ProcessInfo]) -> GpuSnapshot:
        if device.lost or device.handle is None:
            if now - device.lost_since < LOST_RETRY_S or not self._reacquire(device, now):
                return self._unread_snapshot(device)
        try:
            return self._read_device(device, now, by_pid)
        except GpuLost:
            device.lost, device.lost_since = True, now
            self._free_gpm(device)
            self._stop_pcie(device)
            return self._unread_snapshot(device)

    def _reacquire(self, device: _Device, now: float) -> bool:
        """Look a lost (or never found) GPU up again; back, it starts afresh: it may have been reset."""
        self.calls["nvmlDeviceGetHandleByIndex"] += 1
        try:
            handle = self.nvml.nvmlDeviceGetHandleByIndex(device.index)
        except Exception as error:  # noqa: BLE001
            if verdict(error_code(error)) is Verdict.SESSION:
                raise SessionGone(str(error)) from error
            device.lost_since = now
            return False
        self._free_gpm(device)
        self._stop_pcie(device)
        self._rates.forget(device.index)
        if self._xids is not None:
            self._xids.register(device.index, handle)
        fresh = _Device(device.index, handle, checked_tick=self._tick)
        for name in _Device.__slots__:  # type: ignore[attr-defined]
            setattr(device, name, getattr(fresh, name))
        return True

    def _unread_snapshot(self, device: _Device) -> GpuSnapshot:
        static = device.static or StaticFacts()
        return GpuSnapshot(device.index, static.name, static.uuid, static.pci_bus_id, lost=device.lost)

    def _static(self, device: _Device) -> StaticFacts:
        if device.static is None:
            device.static = self._read_static(device)
        return device.static

    def _read_static(self, device: _Device) -> StaticFacts:
        nvml = self.nvml
        pci = self._call(device, Query.PCI, "nvmlDeviceGetPciInfo")
        name = self._call(device, Query.NAME, "nvmlDeviceGetName")
        uuid = self._call(device, Query.UUID, "nvmlDeviceGetUUID")
        cc = self._call(device, Query.COMPUTE_CAPABILITY, "nvmlDeviceGetCudaComputeCapability")
        facts = StaticFacts(
            name=_text(name) if name is not None else None,
            uuid=_text(uuid) if uuid is not None else None,
            pci_bus_id=_text(pci.busId) if pci is not None else None,
            compute_capability=(int(cc[0]), int(cc[1])) if cc is not None else None,
            sm_max_mhz=_float(self._call(device, Query.SM_MAX, "nvmlDeviceGetMaxClockInfo", nvml.NVML_CLOCK_SM)),
            mem_max_mhz=_float(self._call(device, Query.MEM_MAX, "nvmlDeviceGetMaxClockInfo", nvml.NVML_CLOCK_MEM)),
            pcie_max_gen=self._call(device, Query.PCIE_MAX_GEN, "nvmlDeviceGetMaxPcieLinkGeneration"),
            pcie_max_width=self._call(device, Query.PCIE_MAX_WIDTH, "nvmlDeviceGetMaxPcieLinkWidth"),
            minor=self._call(device, Query.MINOR, "nvmlDeviceGetMinorNumber"),
        )
        support = self._call(device, Query.GPM_SUPPORT, "nvmlGpmQueryDeviceSupport")
        if support is None:
            facts.gpm_status = ("GPM needs an R520 or newer driver" if device.caps.lacks(Query.GPM_SUPPORT)
                                else "GPM not supported by this driver or card")
        elif not support.isSupportedDevice:
            facts.gpm_status = "GPM needs a Hopper-class or newer GPU"
        else:
            facts.gpm_supported = True
        return facts

    def _read_mig_mode(self, device: _Device) -> None:
        """MIG mode, every tick: on a MIG GPU utilization is per slice and the whole-GPU query says
        NOT_SUPPORTED; switching it is a state change after which everything is asked again."""
        mode = self._call(device, Query.MIG_MODE, "nvmlDeviceGetMigMode")
        if mode is None:
            if device.caps.skip(Query.MIG_MODE, self._now):
                device.mig = None
            return
        mig = bool(mode[0])
        if device.mig is not None and mig != device.mig:
            device.caps.forget()
            device.state_changed = True
            device.gpm.primed = False
        device.mig = mig

    def _read_slow(self, device: _Device, now: float) -> None:
        nvml = self.nvml
        device.state_changed = False
        limit = self._call(device, Query.POWER_LIMIT, "nvmlDeviceGetEnforcedPowerLimit")
        mode = self._call(device, Query.ECC_MODE, "nvmlDeviceGetEccMode")
        ecc_enabled = None if mode is None else bool(mode[0])
        if device.ecc_mode is not None and ecc_enabled is not None and ecc_enabled != device.ecc_mode:
            device.caps.forget()  # ECC switched (takes a reboot or reset): every answer may differ
        device.ecc_mode = ecc_enabled
        ecc = None
        if ecc_enabled:
            def count(kind: int, counter: int) -> int | None:
                return self._call(device, Query.ECC, "nvmlDeviceGetTotalEccErrors", kind, counter)

            corrected, uncorrected = nvml.NVML_MEMORY_ERROR_TYPE_CORRECTED, nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED
            ecc = EccCounts(count(corrected, nvml.NVML_VOLATILE_ECC), count(uncorrected, nvml.NVML_VOLATILE_ECC),
                            count(corrected, nvml.NVML_AGGREGATE_ECC), count(uncorrected, nvml.NVML_AGGREGATE_ECC))
        instances = []
        if device.mig:
            slots = self._call(device, Query.MIG_COUNT, "nvmlDeviceGetMaxMigDeviceCount") or 0
            for slot in range(int(slots)):
                handle = self._call(device, Query.MIG_HANDLE, "nvmlDeviceGetMigDeviceHandleByIndex", slot)
                if handle is not None:
                    instances.append(self._mig_instance(device, slot, handle))
        device.nvlinks = self._active_links(device)
        # dcgm-exporter's DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION and _PCIE_REPLAY_COUNTER, read as NVML gives them
        energy = self._call(device, Query.ENERGY, "nvmlDeviceGetTotalEnergyConsumption")
        replays = self._call(device, Query.PCIE_REPLAYS, "nvmlDeviceGetPcieReplayCounter")
        device.slow = SlowFacts(limit, ecc, ecc_enabled, tuple(instances),
                                energy_mj=None if energy is None else int(energy),
                                pcie_replays=None if replays is None else int(replays))
        device.slow_at = now

    def _mig_instance(self, device: _Device, slot: int, handle: Any) -> MigInstance:
        memory = self._call(device, Query.MIG_MEMORY, "nvmlDeviceGetMemoryInfo", handle=handle)
        uuid = self._call(device, Query.MIG_UUID, "nvmlDeviceGetUUID", handle=handle)
        name = self._call(device, Query.MIG_NAME, "nvmlDeviceGetName", handle=handle)
        return MigInstance(slot, _text(uuid) if uuid is not None else None, _text(name) if name is not None else None,
                           getattr(memory, "total", None), getattr(memory, "used", None))

    def _active_links(self, device: _Device) -> tuple[int, ...]:
        """The NVLink links that are up (nvmlDeviceGetNvLinkState until the card says there are no more)."""
        if device.caps.skip(Query.NVLINK_STATE, self._now):
            return ()
        active = []
        for link in range(MAX_NVLINKS):
            self.calls["nvmlDeviceGetNvLinkState"] += 1
            try:
                state = self.nvml.nvmlDeviceGetNvLinkState(device.handle, link)
            except Exception as error:  # noqa: BLE001 - INVALID_ARGUMENT past the last link
                if link == 0:
                    self._failed(device, Query.NVLINK_STATE, error)
                break
            if state:
                active.append(link)
        return tuple(active)

    def _read_device(self, device: _Device, now: float, by_pid: dict[int, ProcessInfo]) -> GpuSnapshot:
        nvml = self.nvml
        static = self._static(device)
        self._read_mig_mode(device)
        if device.state_changed or now - device.slow_at >= SLOW_TIER_S:
            self._read_slow(device, now)
        slow = device.slow
        memory, reserved = self._memory(device)
        util = self._call(device, Query.UTIL, "nvmlDeviceGetUtilizationRates")
        power = self._call(device, Query.POWER, "nvmlDeviceGetPowerUsage")
        reasons = self._call(device, Query.REASONS, "nvmlDeviceGetCurrentClocksEventReasons")
        if reasons is None and device.caps.lacks(Query.REASONS):
            reasons = self._call(device, Query.REASONS_OLD, "nvmlDeviceGetCurrentClocksThrottleReasons")
        pstate = self._call(device, Query.PSTATE, "nvmlDeviceGetPerformanceState")
        limit_mw = slow.power_limit_mw
        pcie_tx, pcie_rx, nvlink_tx, nvlink_rx = self._counters(device, now)
        link = PcieLink(
            gen=self._call(device, Query.PCIE_GEN, "nvmlDeviceGetCurrPcieLinkGeneration"),
            width=self._call(device, Query.PCIE_WIDTH, "nvmlDeviceGetCurrPcieLinkWidth"),
            max_gen=static.pcie_max_gen,
            max_width=static.pcie_max_width,
            tx_bytes_per_s=pcie_tx,
            rx_bytes_per_s=pcie_rx,
        )
        processes, pids_status = self._processes(device, by_pid)
        return GpuSnapshot(
            index=device.index,
            name=static.name,
            uuid=static.uuid,
            pci_bus_id=static.pci_bus_id,
            memory_total_bytes=getattr(memory, "total", None),
            memory_used_bytes=getattr(memory, "used", None),
            memory_free_bytes=getattr(memory, "free", None),
            memory_reserved_bytes=reserved,
            util_percent=None if util is None else float(util.gpu),
            memory_util_percent=None if util is None else float(util.memory),
            temperature_c=_float(self._call(device, Query.TEMPERATURE, "nvmlDeviceGetTemperature",
                                            nvml.NVML_TEMPERATURE_GPU)),
            power_w=None if power is None else power / 1000.0,
            power_limit_w=None if limit_mw is None else limit_mw / 1000.0,
            sm_clock_mhz=_float(self._call(device, Query.SM_CLOCK, "nvmlDeviceGetClockInfo", nvml.NVML_CLOCK_SM)),
            sm_clock_max_mhz=static.sm_max_mhz,
            mem_clock_mhz=_float(self._call(device, Query.MEM_CLOCK, "nvmlDeviceGetClockInfo", nvml.NVML_CLOCK_MEM)),
            mem_clock_max_mhz=static.mem_max_mhz,
            fan_percent=_float(self._call(device, Query.FAN, "nvmlDeviceGetFanSpeed")),
            pstate=None if pstate is None or pstate == PSTATE_UNKNOWN else int(pstate),
            throttle_reasons=() if reasons is None else decode_throttle_reasons(int(reasons)),
            pcie=link,
            nvlink_tx_bytes_per_s=nvlink_tx,
            nvlink_rx_bytes_per_s=nvlink_rx,
            ecc=slow.ecc,
            ecc_enabled=slow.ecc_enabled,
            energy_mj=slow.energy_mj,
            xid_last=None if self._xids is None else self._xids.last_xid(device.index),
            pcie_replays=slow.pcie_replays,
            compute_capability=static.compute_capability,
            mig_enabled=device.mig,
            mig=slow.mig if device.mig else (),
            gpm=self._gpm(device, now),
            gpm_status=static.gpm_status if not static.gpm_supported else device.gpm.status,
            processes=processes,
            process_pids_status=pids_status,
        )

    def _memory(self, device: _Device) -> tuple[Any, int | None]:
        """The v2 memory info (reserved apart from used) where the driver has it, else v1."""
        version = getattr(self.nvml, "nvmlMemory_v2", None)
        if version is not None:
            memory = self._call(device, Query.MEMORY_V2, "nvmlDeviceGetMemoryInfo", version)
            if memory is not None:
                return memory, getattr(memory, "reserved", None)
        else:
            device.caps.missing(Query.MEMORY_V2)
        return self._call(device, Query.MEMORY, "nvmlDeviceGetMemoryInfo"), None

    # ----- counters -----

    def _counters(self, device: _Device, now: float) -> tuple[float | None, float | None, float | None, float | None]:
        """(PCIe TX, RX, NVLink TX, RX) in bytes/s. Every active link's counters and (R555+) the PCIe byte
        counters in one field-values call; older drivers' PCIe figure comes from the background thread."""
        caps = device.caps
        request: list[tuple[int, int]] = []
        if device.nvlinks and not caps.skip(Query.NVLINK_FIELDS, now):
            for link in device.nvlinks:
                request += [(NVLINK_TX, link), (NVLINK_RX, link)]
        pcie_fields = self._pcie_fields and not caps.skip(Query.PCIE_FIELDS, now) and not caps.skip(Query.FIELDS, now)
        if pcie_fields:
            request += [(PCIE_TX, 0), (PCIE_RX, 0)]
        rates: dict[int, list[float | None]] = {NVLINK_TX: [], NVLINK_RX: [], PCIE_TX: [], PCIE_RX: []}
        unsupported: set[int] = set()
        values = self._call(device, Query.FIELDS, "nvmlDeviceGetFieldValues", request) if request else None
        for value in values or ():
            field_id = int(value.fieldId)
            if int(value.nvmlReturn) != 0:
                if int(value.nvmlReturn) == NOT_SUPPORTED:
                    unsupported.add(field_id)
                continue
            number, bits = field_number(value)
            if number is None or bits is None:
                continue
            stamp = int(value.timestamp) or int(now * 1e6)
            number = int(number)
            if field_id in (PCIE_TX, PCIE_RX) and bits < 64:
                number, stamp = self._pcie_counters(device).feed(field_id, number, stamp, bits)
                bits = 64
            rates[field_id].append(self._rates.rate((device.index, field_id, int(value.scopeId)), number, stamp,
                                                    bits))
        if unsupported & {NVLINK_TX, NVLINK_RX} and not rates[NVLINK_TX] and not rates[NVLINK_RX]:
            caps.unsupported(Query.NVLINK_FIELDS, now)
        if unsupported & {PCIE_TX, PCIE_RX}:
            caps.unsupported(Query.PCIE_FIELDS, now)
            pcie_fields = False
        nvlink_tx = _total(rates[NVLINK_TX], 1024.0)
        nvlink_rx = _total(rates[NVLINK_RX], 1024.0)
        if pcie_fields:
            pcie_tx, pcie_rx = _total(rates[PCIE_TX], 1.0), _total(rates[PCIE_RX], 1.0)
            if device.pcie_poller is not None:
                self._watch_pcie(device, now, pcie_tx, pcie_rx)
            return pcie_tx, pcie_rx, nvlink_tx, nvlink_rx
        pcie_tx, pcie_rx = self._pcie_throughput(device, now)
        return pcie_tx, pcie_rx, nvlink_tx, nvlink_rx

    def _pcie_counters(self, device: _Device) -> WideCounters:
        """The first 32-bit PCIe reading of a GPU sets up its widened counters and their poller."""
        if device.pcie_wide is None:
            from hwtop.probes.nvml.pcie_wide import CounterPoller, WideCounters

            device.pcie_wide = WideCounters()
            device.pcie_poller = CounterPoller(self._pcie_reader(device, device.pcie_wide), clock=self._clock,
                                               threaded=not self._background.inline)
        return device.pcie_wide

    def _pcie_reader(self, device: _Device, counters: WideCounters) -> Callable[[], bool]:
        nvml, handle = self.nvml, device.handle

        def read() -> bool:
            self.calls["nvmlDeviceGetFieldValues"] += 1
            try:
                values = nvml.nvmlDeviceGetFieldValues(handle, [(PCIE_TX, 0), (PCIE_RX, 0)])
            except Exception:  # noqa: BLE001 - the poller stops; the tick's own reading tells what is wrong
                return False
            for value in values:
                number, bits = field_number(value)
                if int(value.nvmlReturn) == 0 and number is not None and bits is not None:
                    counters.feed(int(value.fieldId), int(number), int(value.timestamp) or int(self._clock() * 1e6),
                                  bits)
            return True

        return read

    def _watch_pcie(self, device: _Device, now: float, tx: float | None, rx: float | None) -> None:
        """Poll a 32-bit PCIe counter while its traffic is heavy: by the tick's own rate, or by the slow tier's
        20-ms throughput sample (a burst that the tick's readings alone could take for an alias)."""
        from hwtop.probes.nvml.pcie_wide import HEAVY_BYTES_PER_S

        sampled = self._pcie_throughput(device, now)
        heavy = max((r for r in (tx, rx, *sampled) if r is not None), default=0.0) >= HEAVY_BYTES_PER_S
        if heavy and device.pcie_poller is not None:
            device.pcie_poller.keep_alive()

    def _stop_pcie(self, device: _Device) -> None:
        if device.pcie_poller is not None:
            device.pcie_poller.close()
        device.pcie_wide = device.pcie_poller = None

    def _pcie_throughput(self, device: _Device, now: float) -> tuple[float | None, float | None]:
        """nvmlDeviceGetPcieThroughput (KB/s over 20 ms, blocking) on the background thread, every SLOW_TIER_S;
        the tick reports the latest result."""
        if device.caps.skip(Query.PCIE_THROUGHPUT, now):
            return None, None
        key = f"pcie_tp:{device.index}"
        result = self._background.result(key)
        if result is not None and result.error is not None:
            kind = verdict(result.error)
            if kind is Verdict.ABSENT:
                device.caps.missing(Query.PCIE_THROUGHPUT)
            elif kind is Verdict.UNSUPPORTED:
                device.caps.unsupported(Query.PCIE_THROUGHPUT, now)
        if result is None or now - result.at >= SLOW_TIER_S:
            self._background.request(key, now, self._pcie_sampler(device.handle))
            result = self._background.result(key)  # inline runs have it already
        if result is None or result.value is None or now - result.at > 2 * SLOW_TIER_S:
            return None, None
        return result.value

    def _pcie_sampler(self, handle: Any) -> Callable[[], tuple[Any, int | None]]:
        nvml = self.nvml

        def sample() -> tuple[Any, int | None]:
            try:
                self.calls["nvmlDeviceGetPcieThroughput"] += 2
                tx = nvml.nvmlDeviceGetPcieThroughput(handle, nvml.NVML_PCIE_UTIL_TX_BYTES)
                rx = nvml.nvmlDeviceGetPcieThroughput(handle, nvml.NVML_PCIE_UTIL_RX_BYTES)
            except Exception as error:  # noqa: BLE001
                return None, error_code(error)
            # its "KB" is 1000 bytes: on the real H200 the samples times 1000 matched the byte counters within
            # 0.3 % (5.185 against 5.184 GB/s), times 1024 were 2.4 % over (tests/fixtures/gpu-capture/h200-r580)
            return (tx * 1000.0, rx * 1000.0), None

        return sample

    # ----- GPM -----

    def _gpm(self, device: _Device, now: float) -> GpmMetrics | None:
        """Hopper activity metrics: two sample buffers, each tick's reading diffed against the last."""
        static, state = device.static, device.gpm
        if static is None or not static.gpm_supported:
            return None
        if not state.samples and not self._allocate_gpm(device, now):
            return None
        previous, current = state.samples
        if self._call(device, Query.GPM_SAMPLE, "nvmlGpmSampleGet", current) is None:
            state.primed = False
            if device.caps.skip(Query.GPM_SAMPLE, now):
                state.status = "GPM sampling not supported in this state (MIG mode?); asked again later"
            return None
        state.samples = [current, previous]  # the next tick overwrites the older sample
        if not state.primed:
            state.primed = True
            return None
        nvml = self.nvml
        request = nvml.c_nvmlGpmMetricsGet_t()
        request.version = nvml.NVML_GPM_METRICS_GET_VERSION
        request.sample1, request.sample2 = previous, current
        request.numMetrics = len(GPM_METRICS)
        for i, metric_id in enumerate(GPM_METRICS):
            request.metrics[i].metricId = metric_id
        self.calls["nvmlGpmMetricsGet"] += 1
        try:
            result = nvml.nvmlGpmMetricsGet(request)
        except Exception as error:  # noqa: BLE001
            state.status = f"GPM metrics unavailable ({error})"
            if verdict(error_code(error)) is Verdict.SESSION:
                raise SessionGone(str(error)) from error
            return None
        state.status = None
        values = [result.metrics[i].value if result.metrics[i].nvmlReturn == 0 else None
                  for i in range(len(GPM_METRICS))]
        return GpmMetrics(*(None if v is None else round(float(v), 2) for v in values))

    def _allocate_gpm(self, device: _Device, now: float) -> bool:
        """Two sample buffers, or none: a failed allocation frees what it got and is retried later (the GPU
        is not lost for it)."""
        state = device.gpm
        if now < state.retry_at:
            return False
        allocated: list[Any] = []
        for _ in range(2):
            self.calls["nvmlGpmSampleAlloc"] += 1
            try:
                allocated.append(self.nvml.nvmlGpmSampleAlloc())
            except Exception as error:  # noqa: BLE001
                for sample in allocated:
                    self._free_sample(sample)
                state.retry_at = now + SLOW_TIER_S
                state.status = f"GPM sample buffers could not be allocated ({error}); retrying"
                if verdict(error_code(error)) is Verdict.SESSION:
                    raise SessionGone(str(error)) from error
                return False
        state.samples, state.primed = allocated, False
        return True

    def _free_sample(self, sample: Any) -> None:
        self.calls["nvmlGpmSampleFree"] += 1
        self._try(lambda: self.nvml.nvmlGpmSampleFree(sample))

    def _free_gpm(self, device: _Device) -> None:
        for sample in device.gpm.samples:
            self._free_sample(sample)
        device.gpm.samples, device.gpm.primed = [], False

    # ----- processes -----

    def _running(self, device: _Device, kind: str) -> tuple[list[tuple[int, int | None]], Verdict | None]:
        """One process list, from the newest query version this driver has (v3, v2, then v1)."""
        query = Query.PROCS_COMPUTE if kind == "compute" else Query.PROCS_GRAPHICS
        if device.caps.skip(query, self._now):
            return [], None
        while self._process_version[kind] < len(VERSIONS):
            version = VERSIONS[self._process_version[kind]]
            for attempt in range(2):
                self.calls[symbol(kind, version)] += 1
                try:
                    entries = call_version(self.nvml, device.handle, kind, version)
                except Exception as error:  # noqa: BLE001
                    code = error_code(error)
                    if code == INSUFFICIENT_SIZE and attempt == 0:
                        continue  # processes started between the size query and the fill
                    if verdict(code) is Verdict.ABSENT:
                        break
                    self._failed(device, query, error)
                    return [], verdict(code)
                device.caps.succeeded(query)
                return entries, None
            self._process_version[kind] += 1  # this driver has no such version: the next older one
        device.caps.missing(query)
        return [], Verdict.ABSENT

    def _processes(self, device: _Device, by_pid: dict[int, ProcessInfo]) -> tuple[tuple[GpuProcess, ...],
                                                                                      str | None]:
        compute, compute_error = self._running(device, "compute")
        graphics, graphics_error = self._running(device, "graphics")
        listed = merge(compute, graphics)
        utilization: dict[int, tuple[float, float]] = {}
        if listed:
            samples = self._call(device, Query.PROC_UTIL, "nvmlDeviceGetProcessUtilization", device.last_sample_us)
            if samples:
                utilization, device.last_sample_us = pick_samples(list(samples), device.last_sample_us)
        result = [self._process(entry, device, by_pid, utilization.get(entry.pid)) for entry in listed]
        hidden = sum(not p.visible for p in result)
        minor = device.static.minor if device.static else None
        if Verdict.DENIED in (compute_error, graphics_error):
            return tuple(result), "process list: no permission (NVML NO_PERMISSION)"
        if hidden and self.source.startswith("demo"):
            return tuple(result), "demo profile: its GPU processes are not processes of this host"
        if not hidden:
            return tuple(result), None
        status = (f"{hidden} GPU process(es) not visible here: NVML reports host pids (container?); "
                  "pid mapping unavailable")
        local = self._device_holders().get(minor, ()) if minor is not None else ()
        shown = {p.pid for p in result}
        for pid in local:
            if pid in shown:
                continue
            host = by_pid.get(pid)
            result.append(GpuProcess(pid=pid, kind="holder", used_memory_bytes=None, visible=True,
                                     user=host.user if host else None,
                                     command=(host.cmdline or host.name) if host else _cmdline(self.proc_root, pid),
                                     cpu_percent=host.cpu_percent if host else None,
                                     rss_bytes=host.rss_bytes if host else None))
        if local:
            status += f"; local processes holding /dev/nvidia{minor}: {', '.join(map(str, local))}"
        return tuple(result), status

    def _process(self, entry: Listed, device: _Device, by_pid: dict[int, ProcessInfo],
                 sample: tuple[float, float] | None) -> GpuProcess:
        pid = entry.pid
        host = by_pid.get(pid)
        visible = host is not None or os.path.exists(f"{self.proc_root}/{pid}")
        minor = device.static.minor if device.static else None
        if visible and minor is not None and not self.source.startswith("demo"):
            # A pid of ours that does not hold this GPU's device file is another process (container pid
            # namespace): not the one NVML means.
            held = self._minors_held(pid)
            visible = held is None or minor in held
            host = host if visible else None
        command = (host.cmdline or host.name) if host else (_cmdline(self.proc_root, pid) if visible else None)
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
        )

    def _minors_held(self, pid: int) -> set[int] | None:
        """nvidia_minors_held, cached per pid for the slow tier: a rank holds hundreds of fds, and which GPU
        files it has open does not change from one tick to the next."""
        now = self._clock()
        cached = self._minors_cache.get(pid)
        if cached is None or now - cached[0] >= SLOW_TIER_S:
            cached = self._minors_cache[pid] = (now, nvidia_minors_held(self.proc_root, pid))
            if len(self._minors_cache) > 4096:  # bounded: drop entries of long-gone pids
                for old in [k for k, (t, _) in self._minors_cache.items() if now - t >= SLOW_TIER_S]:
                    del self._minors_cache[old]
        return cached[1]

    def _device_holders(self) -> dict[int, tuple[int, ...]]:
        """Which local pids hold which /dev/nvidiaN: a scan of every /proc/PID/fd, so on the slow tier only."""
        now = self._clock()
        if now - self._holders_at >= SLOW_TIER_S:
            self._holders = scan_nvidia_holders(self.proc_root)
            self._holders_at = now
        return self._holders


def _total(rates: list[float | None], scale: float) -> float | None:
    """The sum over links of their rates, or None unless every link that answered has one (a partial sum would
    pass for the whole)."""
    if not rates or any(rate is None for rate in rates):
        return None
    return sum(rate for rate in rates if rate is not None) * scale


def _cmdline(proc_root: str, pid: int) -> str | None:
    try:
        with open(f"{proc_root}/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode("utf-8", "replace").strip() or None
    except OSError:
        return None


def nvidia_minors_held(proc_root: str, pid: int) -> set[int] | None:
    """The N of every /dev/nvidiaN the process holds open; None when its fds cannot be read."""
    try:
        fds = os.listdir(f"{proc_root}/{pid}/fd")
    except OSError:
        return None
    minors = set()
    for fd in fds:
        try:
            target = os.readlink(f"{proc_root}/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("/dev/nvidia") and target[11:].isdigit():
            minors.add(int(target[11:]))
    return minors


def scan_nvidia_holders(proc_root: str) -> dict[int, tuple[int, ...]]:
    holders: dict[int, list[int]] = {}
    try:
        pids = [int(n) for n in os.listdir(proc_root) if n.isdigit()]
    except OSError:
        return {}
    for pid in pids:
        for minor in nvidia_minors_held(proc_root, pid) or ():
            holders.setdefault(minor, []).append(pid)
    return {minor: tuple(sorted(p)) for minor, p in holders.items()}


__all__ = ["INIT_RETRY_S", "LOST_RETRY_S", "SLOW_TIER_S", "GpuLost", "NvmlProbe", "decode_throttle_reasons"]
