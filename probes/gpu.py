"""GPUs through NVML (`pynvml` from nvidia-ml-py, or the fake with the same surface).

Init once, shutdown at close. Calls are tiered: static facts once, slow facts (power limit, ECC, MIG)
every few seconds, live values every tick, with the PCIe and NVLink byte counters batched into one
`nvmlDeviceGetFieldValues` call. A query a card answers NOT_SUPPORTED (or an old driver lacks) is remembered
and not asked again; GPU_IS_LOST or UNKNOWN marks that GPU lost while the others keep updating. Nothing here
raises out of `read`.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

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
from hwtop.probes.rates import RateMeter

SLOW_TIER_S = 5.0
LOST_RETRY_S = 5.0

# pynvml's error codes, fixed by the NVML ABI (so this module need not import pynvml to know them).
NOT_SUPPORTED = 3
NO_PERMISSION = 4
NOT_FOUND = 6
DRIVER_NOT_LOADED = 9
LIBRARY_NOT_FOUND = 12
FUNCTION_NOT_FOUND = 13
GPU_IS_LOST = 15
UNKNOWN = 999

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


class GpuLost(Exception):
    pass


@dataclass(slots=True)
class _Device:
    index: int
    handle: Any
    unsupported: set[str] = field(default_factory=set)
    lost: bool = False
    lost_since: float = 0.0
    static: dict[str, Any] = field(default_factory=dict)
    slow: dict[str, Any] = field(default_factory=dict)
    slow_at: float = -1e9
    gpm_samples: list[Any] = field(default_factory=list)
    gpm_status: str | None = None
    last_process_ts: int = 0
    process_permission: bool = True


def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


class NvmlProbe:
    def __init__(
        self,
        nvml: Any | None = None,
        proc_root: str = "/proc",
        source: str = "nvml",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._nvml = nvml
        self.proc_root = proc_root
        self.source = source
        self._clock = clock
        self._devices: list[_Device] = []
        self._system: GpuSystem | None = None
        self._rates = RateMeter()
        self.calls: Counter[str] = Counter()  # NVML calls made, by function: what a tick costs
        self._holders: dict[int, tuple[int, ...]] = {}  # /dev/nvidiaN minor -> local pids holding it
        self._holders_at = -1e9
        self._minors_cache: dict[int, tuple[float, set[int] | None]] = {}

    # ----- lifecycle -----

    def _open(self) -> GpuSystem:
        if self._nvml is None:
            try:
                import pynvml  # lazy: the first frame does not wait for it on a CPU-only box
            except ImportError:
                return GpuSystem(False, "nvidia-ml-py is not installed: no GPU monitoring", source="none")
            self._nvml = pynvml
        nvml = self._nvml
        try:
            nvml.nvmlInit()
        except nvml.NVMLError as error:
            code = getattr(error, "value", None)
            if code == LIBRARY_NOT_FOUND:
                message = "no NVIDIA driver / NVML not found (libnvidia-ml.so.1): running CPU-only"
            elif code == DRIVER_NOT_LOADED:
                message = "NVIDIA driver not loaded (is the kernel module in?): running CPU-only"
            else:
                message = f"NVML failed to start: {error}: running CPU-only"
            self._nvml = None
            return GpuSystem(False, message, source="none")
        driver = self._try(lambda: _text(nvml.nvmlSystemGetDriverVersion()))
        cuda = self._try(nvml.nvmlSystemGetCudaDriverVersion)
        cuda_text = f"{cuda // 1000}.{cuda % 1000 // 10}" if isinstance(cuda, int) else None
        try:
            count = nvml.nvmlDeviceGetCount()
        except nvml.NVMLError as error:
            return GpuSystem(False, f"NVML could not count GPUs: {error}", driver, cuda_text, self.source)
        for index in range(count):
            try:
                handle = nvml.nvmlDeviceGetHandleByIndex(index)
                device = _Device(index, handle)
            except nvml.NVMLError:
                device = _Device(index, None, lost=True, lost_since=self._clock())
            self._devices.append(device)
        if count == 0:
            return GpuSystem(False, "NVIDIA driver loaded but no GPU visible", driver, cuda_text, self.source)
        return GpuSystem(True, None, driver, cuda_text, self.source)

    def _try(self, call: Callable[[], Any]) -> Any:
        try:
            return call()
        except Exception:  # noqa: BLE001 - an optional fact
            return None

    def close(self) -> None:
        if self._nvml is not None and self._system is not None and self._system.available:
            for device in self._devices:
                for sample in device.gpm_samples:
                    self._try(lambda s=sample: self._nvml.nvmlGpmSampleFree(s))
            self._try(self._nvml.nvmlShutdown)
        self._devices = []
        self._system = None

    def topology_inputs(self) -> tuple[list[tuple[str, str]], list[tuple[int, tuple[str | None, ...]]]]:
        """(name, bus id) and NVLink state per GPU, for probes.topology; read once (NVML topology calls are
        not thread-safe, and this runs on the sampler's thread only)."""
        from hwtop.probes.topology import count_nvlinks

        if self._system is None:
            self._system = self._open()
        gpus, links = [], []
        for device in self._devices:
            if device.handle is None:
                continue
            if not device.static:
                self._read_static(device)
            gpus.append((f"GPU{device.index}", device.static.get("pci_bus_id") or ""))
            links.append(count_nvlinks(self._nvml, device.handle))
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

        if self._system is None:
            self._system = self._open()
        relations: dict[tuple[int, int], str] = {}
        devices = [d for d in self._devices if d.handle is not None]
        for a in devices:
            for b in devices:
                if a.index >= b.index:
                    continue
                self.calls["nvmlDeviceGetTopologyCommonAncestor"] += 1
                try:
                    level = self._nvml.nvmlDeviceGetTopologyCommonAncestor(a.handle, b.handle)
                except self._nvml.NVMLError:
                    return relations  # unsupported here: the sysfs tree is the only source
                if level in NVML_LEVELS:
                    relations[(a.index, b.index)] = relations[(b.index, a.index)] = NVML_LEVELS[level]
        return relations

    # ----- one guarded call -----

    def _call(self, device: _Device, key: str, function: str, *args: Any) -> Any:
        """Call nvml.<function>(handle, *args); None when unsupported, forbidden or absent; GpuLost when lost."""
        if key in device.unsupported:
            return None
        nvml = self._nvml
        self.calls[function] += 1
        try:
            return getattr(nvml, function)(device.handle, *args)
        except nvml.NVMLError as error:
            code = getattr(error, "value", None)
            if code in (NOT_SUPPORTED, FUNCTION_NOT_FOUND):
                device.unsupported.add(key)
                return None
            if code in (GPU_IS_LOST, UNKNOWN):
                raise GpuLost(str(error)) from error
            return None  # NO_PERMISSION, TIMEOUT, ...: unknown this tick, asked again next tick
        except AttributeError:  # a pynvml too old to have the binding at all
            device.unsupported.add(key)
            return None

    # ----- reading -----

    def read(self, processes: tuple[ProcessInfo, ...] = ()) -> tuple[GpuSystem, tuple[GpuSnapshot, ...]]:
        if self._system is None:
            self._system = self._open()
        if not self._system.available:
            return self._system, ()
        now = self._clock()
        by_pid = {p.pid: p for p in processes}
        gpus = []
        for device in self._devices:
            if device.lost and now - device.lost_since < LOST_RETRY_S:
                gpus.append(self._lost_snapshot(device))
                continue
            try:
                if device.handle is None:
                    device.handle = self._nvml.nvmlDeviceGetHandleByIndex(device.index)
                gpus.append(self._read_device(device, now, by_pid))
                device.lost = False
            except (GpuLost, self._nvml.NVMLError):
                device.lost, device.lost_since = True, now
                gpus.append(self._lost_snapshot(device))
        return self._system, tuple(gpus)

    def _lost_snapshot(self, device: _Device) -> GpuSnapshot:
        static = device.static
        return GpuSnapshot(device.index, static.get("name"), static.get("uuid"), static.get("pci_bus_id"), lost=True)

    def _read_static(self, device: _Device) -> None:
        nvml = self._nvml
        pci = self._call(device, "pci", "nvmlDeviceGetPciInfo")
        name = self._call(device, "name", "nvmlDeviceGetName")
        uuid = self._call(device, "uuid", "nvmlDeviceGetUUID")
        device.static = {
            "name": _text(name) if name is not None else None,
            "uuid": _text(uuid) if uuid is not None else None,
            "pci_bus_id": _text(pci.busId) if pci is not None else None,
            "cc": self._call(device, "cc", "nvmlDeviceGetCudaComputeCapability"),
            "sm_max": self._call(device, "sm_max", "nvmlDeviceGetMaxClockInfo", nvml.NVML_CLOCK_SM),
            "mem_max": self._call(device, "mem_max", "nvmlDeviceGetMaxClockInfo", nvml.NVML_CLOCK_MEM),
            "pcie_max_gen": self._call(device, "pcie_max_gen", "nvmlDeviceGetMaxPcieLinkGeneration"),
            "pcie_max_width": self._call(device, "pcie_max_width", "nvmlDeviceGetMaxPcieLinkWidth"),
            "minor": self._call(device, "minor", "nvmlDeviceGetMinorNumber"),
        }
        support = self._call(device, "gpm", "nvmlGpmQueryDeviceSupport")
        if support is None:
            device.gpm_status = "GPM not supported by this driver or card"
        elif not support.isSupportedDevice:
            device.gpm_status = "GPM needs a Hopper-class or newer GPU"
        else:
            device.gpm_status = None

    def _read_slow(self, device: _Device, now: float) -> None:
        nvml = self._nvml
        limit = self._call(device, "power_limit", "nvmlDeviceGetEnforcedPowerLimit")
        ecc = None
        corrected = self._call(device, "ecc", "nvmlDeviceGetTotalEccErrors",
                               nvml.NVML_MEMORY_ERROR_TYPE_CORRECTED, nvml.NVML_VOLATILE_ECC)
        if corrected is not None:
            ecc = EccCounts(
                volatile_corrected=corrected,
                volatile_uncorrected=self._call(device, "ecc", "nvmlDeviceGetTotalEccErrors",
                                                nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, nvml.NVML_VOLATILE_ECC),
                aggregate_corrected=self._call(device, "ecc", "nvmlDeviceGetTotalEccErrors",
                                               nvml.NVML_MEMORY_ERROR_TYPE_CORRECTED, nvml.NVML_AGGREGATE_ECC),
                aggregate_uncorrected=self._call(device, "ecc", "nvmlDeviceGetTotalEccErrors",
                                                 nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, nvml.NVML_AGGREGATE_ECC),
            )
        mode = self._call(device, "mig", "nvmlDeviceGetMigMode")
        mig_enabled = None if mode is None else bool(mode[0])
        instances = []
        if mig_enabled:
            count = self._call(device, "mig_count", "nvmlDeviceGetMaxMigDeviceCount") or 0
            for slot in range(count):
                handle = self._call(device, "mig_handle", "nvmlDeviceGetMigDeviceHandleByIndex", slot)
                if handle is None:
                    continue
                instances.append(self._mig_instance(slot, handle))
        device.slow = {"power_limit_mw": limit, "ecc": ecc, "mig_enabled": mig_enabled, "mig": tuple(instances)}
        device.slow_at = now

    def _mig_instance(self, slot: int, handle: Any) -> MigInstance:
        nvml = self._nvml
        def get(function: str) -> Any:
            self.calls[function] += 1
            try:
                return getattr(nvml, function)(handle)
            except nvml.NVMLError:
                return None
        memory = get("nvmlDeviceGetMemoryInfo")
        uuid, name = get("nvmlDeviceGetUUID"), get("nvmlDeviceGetName")
        return MigInstance(slot, _text(uuid) if uuid is not None else None, _text(name) if name is not None else None,
                           getattr(memory, "total", None), getattr(memory, "used", None))

    def _read_device(self, device: _Device, now: float, by_pid: dict[int, ProcessInfo]) -> GpuSnapshot:
        nvml = self._nvml
        if not device.static:
            self._read_static(device)
        if now - device.slow_at >= SLOW_TIER_S:
            self._read_slow(device, now)
        static, slow = device.static, device.slow
        memory = self._call(device, "memory_v2", "nvmlDeviceGetMemoryInfo", nvml.nvmlMemory_v2)
        reserved = getattr(memory, "reserved", None) if memory is not None else None
        if memory is None:
            memory = self._call(device, "memory", "nvmlDeviceGetMemoryInfo")
        util = self._call(device, "util", "nvmlDeviceGetUtilizationRates")
        power = self._call(device, "power", "nvmlDeviceGetPowerUsage")
        reasons = self._call(device, "reasons", "nvmlDeviceGetCurrentClocksEventReasons")
        if reasons is None:
            reasons = self._call(device, "reasons_old", "nvmlDeviceGetCurrentClocksThrottleReasons")
        pstate = self._call(device, "pstate", "nvmlDeviceGetPerformanceState")
        limit_mw = slow.get("power_limit_mw")
        pcie, nvlink_tx, nvlink_rx = self._counters(device, now)
        return GpuSnapshot(
            index=device.index,
            name=static["name"],
            uuid=static["uuid"],
            pci_bus_id=static["pci_bus_id"],
            memory_total_bytes=getattr(memory, "total", None),
            memory_used_bytes=getattr(memory, "used", None),
            memory_free_bytes=getattr(memory, "free", None),
            memory_reserved_bytes=reserved,
            util_percent=None if util is None else float(util.gpu),
            memory_util_percent=None if util is None else float(util.memory),
            temperature_c=_float(self._call(device, "temp", "nvmlDeviceGetTemperature", nvml.NVML_TEMPERATURE_GPU)),
            power_w=None if power is None else power / 1000.0,
            power_limit_w=None if limit_mw is None else limit_mw / 1000.0,
            sm_clock_mhz=_float(self._call(device, "sm_clock", "nvmlDeviceGetClockInfo", nvml.NVML_CLOCK_SM)),
            sm_clock_max_mhz=_float(static["sm_max"]),
            mem_clock_mhz=_float(self._call(device, "mem_clock", "nvmlDeviceGetClockInfo", nvml.NVML_CLOCK_MEM)),
            mem_clock_max_mhz=_float(static["mem_max"]),
            fan_percent=_float(self._call(device, "fan", "nvmlDeviceGetFanSpeed")),
            pstate=None if pstate is None or pstate == 32 else int(pstate),  # 32: NVML_PSTATE_UNKNOWN
            throttle_reasons=() if reasons is None else decode_throttle_reasons(int(reasons)),
            pcie=pcie,
            nvlink_tx_bytes_per_s=nvlink_tx,
            nvlink_rx_bytes_per_s=nvlink_rx,
            ecc=slow.get("ecc"),
            compute_capability=tuple(static["cc"]) if static["cc"] is not None else None,
            mig_enabled=slow.get("mig_enabled"),
            mig=slow.get("mig", ()),
            gpm=self._gpm(device),
            gpm_status=device.gpm_status,
            **self._processes(device, by_pid),
        )

    def _counters(self, device: _Device, now: float) -> tuple[PcieLink, float | None, float | None]:
        """PCIe link and TX/RX, and NVLink TX/RX, from one batched nvmlDeviceGetFieldValues call of byte
        counters (each field answers for itself: a card without NVLink says NOT_SUPPORTED for those alone)."""
        nvml = self._nvml
        fields = [nvml.NVML_FI_DEV_PCIE_COUNT_TX_BYTES, nvml.NVML_FI_DEV_PCIE_COUNT_RX_BYTES,
                  nvml.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, nvml.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX]
        rates: list[float | None] = [None, None, None, None]
        if "fields" not in device.unsupported:
            self.calls["nvmlDeviceGetFieldValues"] += 1
            try:
                values = nvml.nvmlDeviceGetFieldValues(device.handle, fields)
            except nvml.NVMLError as error:
                if getattr(error, "value", None) in (GPU_IS_LOST, UNKNOWN):
                    raise GpuLost(str(error)) from error
                device.unsupported.add("fields")
                values = None
            if values is not None:
                scale = (1.0, 1.0, 1024.0, 1024.0)  # NVLink counters are in KiB
                for i, value in enumerate(values):
                    if value.nvmlReturn == 0:
                        rates[i] = self._rates.rate((device.index, i), float(value.value.ullVal) * scale[i], now)
                    elif i < 2:
                        device.unsupported.add("pcie_fields")
                if all(v.nvmlReturn != 0 for v in values):
                    device.unsupported.add("fields")
        tx, rx, nvl_tx, nvl_rx = rates
        if "pcie_fields" in device.unsupported or "fields" in device.unsupported:
            # Older cards: the 20 ms sampling call, in KB/s.
            tx_kb = self._call(device, "pcie_tp", "nvmlDeviceGetPcieThroughput", nvml.NVML_PCIE_UTIL_TX_BYTES)
            rx_kb = self._call(device, "pcie_tp", "nvmlDeviceGetPcieThroughput", nvml.NVML_PCIE_UTIL_RX_BYTES)
            tx = None if tx_kb is None else tx_kb * 1024.0
            rx = None if rx_kb is None else rx_kb * 1024.0
        link = PcieLink(
            gen=self._call(device, "pcie_gen", "nvmlDeviceGetCurrPcieLinkGeneration"),
            width=self._call(device, "pcie_width", "nvmlDeviceGetCurrPcieLinkWidth"),
            max_gen=device.static.get("pcie_max_gen"),
            max_width=device.static.get("pcie_max_width"),
            tx_bytes_per_s=tx,
            rx_bytes_per_s=rx,
        )
        return link, nvl_tx, nvl_rx

    def _gpm(self, device: _Device) -> GpmMetrics | None:
        if device.gpm_status is not None:
            return None
        nvml = self._nvml
        if not device.gpm_samples:
            self.calls["nvmlGpmSampleAlloc"] += 2
            device.gpm_samples = [nvml.nvmlGpmSampleAlloc(), nvml.nvmlGpmSampleAlloc()]
            if self._call(device, "gpm_sample", "nvmlGpmSampleGet", device.gpm_samples[0]) is None:
                device.gpm_status = "GPM sampling refused by the driver"
            return None  # the first reading needs two samples
        previous, current = device.gpm_samples
        if self._call(device, "gpm_sample", "nvmlGpmSampleGet", current) is None:
            device.gpm_status = "GPM sampling refused by the driver"
            return None
        request = nvml.c_nvmlGpmMetricsGet_t()
        request.version = nvml.NVML_GPM_METRICS_GET_VERSION
        request.sample1, request.sample2 = previous, current
        ids = (nvml.NVML_GPM_METRIC_SM_UTIL, nvml.NVML_GPM_METRIC_SM_OCCUPANCY,
               nvml.NVML_GPM_METRIC_ANY_TENSOR_UTIL, nvml.NVML_GPM_METRIC_DRAM_BW_UTIL)
        request.numMetrics = len(ids)
        for i, metric_id in enumerate(ids):
            request.metrics[i].metricId = metric_id
        device.gpm_samples = [current, previous]  # the next tick overwrites the older sample
        self.calls["nvmlGpmMetricsGet"] += 1
        try:
            result = nvml.nvmlGpmMetricsGet(request)
        except nvml.NVMLError:
            return None
        values = [result.metrics[i].value if result.metrics[i].nvmlReturn == 0 else None for i in range(len(ids))]
        return GpmMetrics(*(None if v is None else round(float(v), 2) for v in values))

    def _processes(self, device: _Device, by_pid: dict[int, ProcessInfo]) -> dict[str, Any]:
        nvml = self._nvml
        listed: list[tuple[Any, str]] = []
        forbidden = False
        for function, kind in (("nvmlDeviceGetComputeRunningProcesses", "compute"),
                               ("nvmlDeviceGetGraphicsRunningProcesses", "graphics")):
            if kind in device.unsupported:
                continue
            self.calls[function] += 1
            try:
                listed.extend((p, kind) for p in getattr(nvml, function)(device.handle))
            except nvml.NVMLError as error:
                code = getattr(error, "value", None)
                if code in (GPU_IS_LOST, UNKNOWN):
                    raise GpuLost(str(error)) from error
                if code == NO_PERMISSION:
                    forbidden = True
                elif code in (NOT_SUPPORTED, FUNCTION_NOT_FOUND):
                    device.unsupported.add(kind)
        utilization: dict[int, Any] = {}
        if listed and "proc_util" not in device.unsupported:
            self.calls["nvmlDeviceGetProcessUtilization"] += 1
            try:
                samples = nvml.nvmlDeviceGetProcessUtilization(device.handle, device.last_process_ts)
                for sample in samples:
                    utilization[sample.pid] = sample
                    device.last_process_ts = max(device.last_process_ts, int(sample.timeStamp))
            except nvml.NVMLError as error:
                if getattr(error, "value", None) in (NOT_SUPPORTED, FUNCTION_NOT_FOUND):
                    device.unsupported.add("proc_util")
        result = []
        hidden = 0
        holders: dict[int, tuple[int, ...]] | None = None
        minor = device.static.get("minor")
        for proc, kind in listed:
            pid = int(proc.pid)
            host = by_pid.get(pid)
            visible = host is not None or os.path.exists(f"{self.proc_root}/{pid}")
            if visible and minor is not None and not self.source.startswith("demo"):
                # A pid of ours that does not hold this GPU's device file is another process (container pid
                # namespace): not the one NVML means.
                held = self._minors_held(pid)
                visible = held is None or minor in held
                host = host if visible else None
            command = (host.cmdline or host.name) if host else (_cmdline(self.proc_root, pid) if visible else None)
            hidden += not visible
            sample = utilization.get(pid)
            result.append(GpuProcess(
                pid=pid, kind=kind, used_memory_bytes=getattr(proc, "usedGpuMemory", None),
                sm_percent=None if sample is None else float(sample.smUtil),
                mem_percent=None if sample is None else float(sample.memUtil),
                visible=visible,
                user=host.user if host else None,
                command=command,
                cpu_percent=host.cpu_percent if host else None,
                rss_bytes=host.rss_bytes if host else None,
            ))
        status = None
        if forbidden:
            status = "process list: no permission (NVML NO_PERMISSION)"
        elif hidden and self.source.startswith("demo"):
            status = "demo profile: its GPU processes are not processes of this host"
        elif hidden:
            status = (f"{hidden} GPU process(es) not visible here: NVML reports host pids (container?); "
                      "pid mapping unavailable")
            holders = self._device_holders()
            local = holders.get(minor, ()) if minor is not None else ()
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
        return {"processes": tuple(result), "process_pids_status": status}

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


def _float(value: Any) -> float | None:
    return None if value is None else float(value)



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
