"""A faithful fake of the pynvml functions hwtop calls, driven by a demo profile.

Same function names and argument orders as `pynvml` (nvidia-ml-py), the same return shapes (pynvml's own
ctypes structs and friendly objects, strings where pynvml decodes them), and pynvml's own `NVMLError`
subclasses, raised with the codes real cards give: `NOT_SUPPORTED` for what a card lacks, `GPU_IS_LOST` for a
fallen-off GPU, `UNINITIALIZED` before `nvmlInit`. The probe code runs against it unchanged.

Values move over time like a training job's (deterministic for a seed and a clock), and `truth(i)` tells
tests what the fake holds at this instant, so they can check the probe's report field by field.
Faults can be injected per function and per GPU.
"""

from __future__ import annotations

import ctypes
import math
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pynvml
from hwtop.demo.profiles import MIB, DemoProfile, get_profile

NVMLError = pynvml.NVMLError

_EVENT = {
    "idle": pynvml.nvmlClocksEventReasonGpuIdle,
    "sw_power_cap": pynvml.nvmlClocksEventReasonSwPowerCap,
    "hw_slowdown": pynvml.nvmlClocksEventReasonHwSlowdown,
    "sw_thermal": pynvml.nvmlClocksEventReasonSwThermalSlowdown,
    "hw_thermal": pynvml.nvmlClocksEventReasonHwThermalSlowdown,
}


@dataclass(frozen=True, slots=True)
class FakeHandle:
    index: int
    mig_slot: int | None = None


@dataclass(slots=True)
class GpuTruth:
    """What the fake card holds right now, in the units NVML reports (mW, KB/s, MHz, bytes)."""

    util: int
    mem_util: int
    used: int
    reserved: int
    total: int
    temperature: int
    power_mw: int
    power_limit_mw: int
    sm_clock: int
    mem_clock: int
    fan: int
    pstate: int
    event_reasons: int
    pcie_gen: int
    pcie_width: int
    pcie_tx_bytes: int  # cumulative counters, as the field values report them
    pcie_rx_bytes: int
    nvlink_tx_kib: int
    nvlink_rx_kib: int
    ecc_corrected: int
    ecc_uncorrected: int
    sm_activity: float
    sm_occupancy: float
    tensor_activity: float
    dram_bw_util: float


@dataclass(slots=True)
class _Fault:
    code: int
    gpu: int | None
    remaining: int | None


@dataclass(slots=True)
class _GpmSample:
    gpu: int
    time: float


@dataclass(slots=True)
class _GpuState:
    lost: bool = False
    job_override: float | None = None  # forced utilization fraction (tests, advice scenarios)
    forced_reasons: int = 0
    pcie_gen_override: int | None = None
    pcie_width_override: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class FakeNvml:
    """Stands in for the `pynvml` module: pass it where the probe takes `nvml=`."""

    NVMLError = pynvml.NVMLError

    def __init__(
        self,
        profile: DemoProfile | str,
        seed: int = 0,
        clock: Callable[[], float] = time.monotonic,
        library_missing: bool = False,
        driver_not_loaded: bool = False,
    ) -> None:
        self.profile = get_profile(profile) if isinstance(profile, str) else profile
        self.seed = seed
        self._clock = clock
        self._start = clock()
        self.library_missing = library_missing
        self.driver_not_loaded = driver_not_loaded
        self.initialized = 0
        self.calls: Counter[str] = Counter()
        self._faults: dict[str, list[_Fault]] = {}
        self._gpus = [_GpuState() for _ in range(self.profile.gpu_count)]
        self._gpm_samples: dict[int, _GpmSample] = {}

    # ----- control surface for tests and demos (not part of pynvml) -----

    def fail(self, function: str, code: int, gpu: int | None = None, times: int | None = None) -> None:
        """Make `function` raise NVMLError(code), on one GPU or all, always or `times` times."""
        self._faults.setdefault(function, []).append(_Fault(code, gpu, times))

    def clear_faults(self) -> None:
        self._faults.clear()

    def lose_gpu(self, index: int, lost: bool = True) -> None:
        self._gpus[index].lost = lost

    def set_load(self, index: int, fraction: float | None) -> None:
        self._gpus[index].job_override = fraction

    def force_reasons(self, index: int, *names: str) -> None:
        self._gpus[index].forced_reasons = sum(_EVENT[n] for n in names)

    def set_pcie_link(self, index: int, gen: int | None, width: int | None) -> None:
        self._gpus[index].pcie_gen_override = gen
        self._gpus[index].pcie_width_override = width

    def elapsed(self) -> float:
        return self._clock() - self._start

    def truth(self, index: int) -> GpuTruth:
        """The card's state at this instant; a pure function of (profile, seed, index, clock)."""
        model = self.profile.gpu
        state = self._gpus[index]
        t = self.elapsed()
        busy = index in self.profile.busy_gpus
        rng = random.Random(f"{self.seed}:{index}:{int(t)}")
        if state.job_override is not None:
            load = max(0.0, min(1.0, state.job_override))
        elif busy:
            # A training step rhythm: high utilization with a dip at each (simulated) eval or checkpoint.
            load = 0.86 + 0.08 * math.sin(t / 6.0 + index) + rng.uniform(-0.03, 0.03)
            if int(t) % 60 >= 57:
                load = 0.15
            load = max(0.0, min(1.0, load))
        else:
            load = 0.0
        util = round(100 * load)
        job_memory = sum(p.used_memory_bytes or 0 for p in self.profile.processes if p.gpu == index)
        ramp = min(1.0, t / 20.0)  # memory grows as the job allocates its first batches
        used = int(min(model.memory_bytes - model.reserved_bytes,
                       (job_memory * ramp if busy else 0) + 4 * MIB + (index * 3 % 7) * MIB))
        power = model.idle_power_w + (model.power_limit_w - model.idle_power_w) * load * 0.93
        power += rng.uniform(-2, 2) if load else 0
        power = max(model.idle_power_w * 0.8, min(model.power_limit_w, power))
        reasons = state.forced_reasons
        if load == 0:
            reasons |= _EVENT["idle"]
        if power >= model.power_limit_w * 0.98:
            reasons |= _EVENT["sw_power_cap"]
        sm_clock = int(model.sm_max_mhz * (0.97 if load else 0.15))
        if reasons & (_EVENT["sw_power_cap"] | _EVENT["hw_slowdown"] | _EVENT["hw_thermal"] | _EVENT["sw_thermal"]):
            sm_clock = int(model.sm_max_mhz * 0.78)
        # Idle cards drop their PCIe link to save power; busy ones train at their maximum.
        gen = state.pcie_gen_override or (model.pcie_max_gen if load else 1)
        width = state.pcie_width_override or model.pcie_max_width
        pcie_rate = 0.6e9 * load  # bytes/s of input batches and gradients crossing PCIe
        return GpuTruth(
            util=util,
            mem_util=round(util * 0.55),
            used=used,
            reserved=model.reserved_bytes,
            total=model.memory_bytes,
            temperature=round(31 + 45 * load + index % 3),
            power_mw=round(power * 1000),
            power_limit_mw=round(model.power_limit_w * 1000),
            sm_clock=sm_clock,
            mem_clock=model.mem_max_mhz if load else int(model.mem_max_mhz * 0.1),
            fan=round(30 + 50 * load) if model.has_fan else 0,
            pstate=0 if load else 8,
            event_reasons=reasons,
            pcie_gen=gen,
            pcie_width=width,
            pcie_tx_bytes=int(pcie_rate * 0.3 * t),
            pcie_rx_bytes=int(pcie_rate * t),
            nvlink_tx_kib=int(45e6 * load * t) if model.nvlinks else 0,
            nvlink_rx_kib=int(45e6 * load * t) if model.nvlinks else 0,
            ecc_corrected=0 if not model.ecc else state.extra.get("ecc_corrected", 0),
            ecc_uncorrected=0 if not model.ecc else state.extra.get("ecc_uncorrected", 0),
            sm_activity=round(100 * load * 0.82, 2),
            sm_occupancy=round(100 * load * 0.41, 2),
            tensor_activity=round(100 * load * 0.37, 2),
            dram_bw_util=round(100 * load * 0.48, 2),
        )

    # ----- shared call gate -----

    def _enter(self, name: str, handle: FakeHandle | None = None) -> None:
        self.calls[name] += 1
        if not self.initialized:
            raise NVMLError(pynvml.NVML_ERROR_UNINITIALIZED)
        gpu = handle.index if handle is not None else None
        for fault in self._faults.get(name, []):
            if fault.gpu is None or fault.gpu == gpu:
                if fault.remaining is not None:
                    if fault.remaining <= 0:
                        continue
                    fault.remaining -= 1
                raise NVMLError(fault.code)
        if gpu is not None and self._gpus[gpu].lost:
            raise NVMLError(pynvml.NVML_ERROR_GPU_IS_LOST)

    @staticmethod
    def _not_supported() -> NVMLError:
        return NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)

    # ----- library -----

    def nvmlInit(self) -> None:
        self.calls["nvmlInit"] += 1
        if self.library_missing:
            raise NVMLError(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)
        if self.driver_not_loaded:
            raise NVMLError(pynvml.NVML_ERROR_DRIVER_NOT_LOADED)
        for fault in self._faults.get("nvmlInit", []):
            raise NVMLError(fault.code)
        self.initialized += 1

    def nvmlInitWithFlags(self, flags: int) -> None:
        self.nvmlInit()

    def nvmlShutdown(self) -> None:
        self.calls["nvmlShutdown"] += 1
        if not self.initialized:
            raise NVMLError(pynvml.NVML_ERROR_UNINITIALIZED)
        self.initialized -= 1

    def nvmlSystemGetDriverVersion(self) -> str:
        self._enter("nvmlSystemGetDriverVersion")
        return self.profile.driver_version

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        self._enter("nvmlSystemGetCudaDriverVersion")
        return self.profile.cuda_driver_version

    def nvmlDeviceGetCount(self) -> int:
        self._enter("nvmlDeviceGetCount")
        return self.profile.gpu_count

    def nvmlDeviceGetHandleByIndex(self, index: int) -> FakeHandle:
        self.calls["nvmlDeviceGetHandleByIndex"] += 1
        if not self.initialized:
            raise NVMLError(pynvml.NVML_ERROR_UNINITIALIZED)
        if not 0 <= index < self.profile.gpu_count:
            raise NVMLError(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        handle = FakeHandle(index)
        self._enter("nvmlDeviceGetHandleByIndex", handle)
        return handle

    # ----- static facts -----

    def nvmlDeviceGetName(self, handle: FakeHandle) -> str:
        self._enter("nvmlDeviceGetName", handle)
        if handle.mig_slot is not None:
            return f"{self.profile.gpu.name} MIG {('1g.10gb', '3g.40gb')[handle.mig_slot % 2]}"
        return self.profile.gpu.name

    def nvmlDeviceGetUUID(self, handle: FakeHandle) -> str:
        self._enter("nvmlDeviceGetUUID", handle)
        rng = random.Random(f"uuid:{self.profile.name}:{self.seed}:{handle.index}")
        hexes = "".join(rng.choice("0123456789abcdef") for _ in range(32))
        uuid = f"{hexes[:8]}-{hexes[8:12]}-{hexes[12:16]}-{hexes[16:20]}-{hexes[20:]}"
        if handle.mig_slot is not None:
            return f"MIG-{uuid[:-2]}{handle.mig_slot:02d}"
        return f"GPU-{uuid}"

    def nvmlDeviceGetPciInfo(self, handle: FakeHandle) -> pynvml.nvmlPciInfo_t:
        self._enter("nvmlDeviceGetPciInfo", handle)
        info = pynvml.nvmlPciInfo_t()
        bus_id = self.profile.bus_id(handle.index)
        info.busId = bus_id.encode()
        info.busIdLegacy = bus_id[4:].encode()
        info.domain = int(bus_id.split(":")[0], 16)
        info.bus = int(bus_id.split(":")[1], 16)
        info.device = 0
        info.pciDeviceId = 0x20B210DE
        return info

    def nvmlDeviceGetMinorNumber(self, handle: FakeHandle) -> int:
        """The N of /dev/nvidiaN."""
        self._enter("nvmlDeviceGetMinorNumber", handle)
        return handle.index

    def nvmlDeviceGetCudaComputeCapability(self, handle: FakeHandle) -> tuple[int, int]:
        self._enter("nvmlDeviceGetCudaComputeCapability", handle)
        return self.profile.gpu.compute_capability

    def nvmlDeviceGetMaxClockInfo(self, handle: FakeHandle, type: int) -> int:
        self._enter("nvmlDeviceGetMaxClockInfo", handle)
        model = self.profile.gpu
        if type in (pynvml.NVML_CLOCK_SM, pynvml.NVML_CLOCK_GRAPHICS):
            return model.sm_max_mhz
        if type == pynvml.NVML_CLOCK_MEM:
            return model.mem_max_mhz
        raise NVMLError(pynvml.NVML_ERROR_INVALID_ARGUMENT)

    def nvmlDeviceGetMaxPcieLinkGeneration(self, handle: FakeHandle) -> int:
        self._enter("nvmlDeviceGetMaxPcieLinkGeneration", handle)
        return self.profile.gpu.pcie_max_gen

    def nvmlDeviceGetMaxPcieLinkWidth(self, handle: FakeHandle) -> int:
        self._enter("nvmlDeviceGetMaxPcieLinkWidth", handle)
        return self.profile.gpu.pcie_max_width

    def nvmlDeviceGetEnforcedPowerLimit(self, handle: FakeHandle) -> int:
        self._enter("nvmlDeviceGetEnforcedPowerLimit", handle)
        return self.truth(handle.index).power_limit_mw

    # ----- live values -----

    def nvmlDeviceGetMemoryInfo(self, handle: FakeHandle, version: int | None = None) -> Any:
        self._enter("nvmlDeviceGetMemoryInfo", handle)
        if handle.mig_slot is not None:
            total = (10 if handle.mig_slot % 2 == 0 else 40) * 1024**3
            used = total // 4
            memory = pynvml.c_nvmlMemory_t()
            memory.total, memory.used, memory.free = total, used, total - used
            return memory
        truth = self.truth(handle.index)
        if version:
            memory = pynvml.c_nvmlMemory_v2_t()
            memory.version = version
            memory.total, memory.reserved, memory.used = truth.total, truth.reserved, truth.used
            memory.free = truth.total - truth.reserved - truth.used
            return memory
        memory = pynvml.c_nvmlMemory_t()
        # The v1 struct folds reserved memory into "used", as real drivers do.
        memory.total, memory.used = truth.total, truth.used + truth.reserved
        memory.free = truth.total - memory.used
        return memory

    def nvmlDeviceGetUtilizationRates(self, handle: FakeHandle) -> pynvml.c_nvmlUtilization_t:
        self._enter("nvmlDeviceGetUtilizationRates", handle)
        truth = self.truth(handle.index)
        rates = pynvml.c_nvmlUtilization_t()
        rates.gpu, rates.memory = truth.util, truth.mem_util
        return rates

    def nvmlDeviceGetTemperature(self, handle: FakeHandle, sensor: int) -> int:
        self._enter("nvmlDeviceGetTemperature", handle)
        if sensor != pynvml.NVML_TEMPERATURE_GPU:
            raise NVMLError(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return self.truth(handle.index).temperature

    def nvmlDeviceGetPowerUsage(self, handle: FakeHandle) -> int:
        self._enter("nvmlDeviceGetPowerUsage", handle)
        return self.truth(handle.index).power_mw

    def nvmlDeviceGetClockInfo(self, handle: FakeHandle, type: int) -> int:
        self._enter("nvmlDeviceGetClockInfo", handle)
        truth = self.truth(handle.index)
        if type in (pynvml.NVML_CLOCK_SM, pynvml.NVML_CLOCK_GRAPHICS):
            return truth.sm_clock
        if type == pynvml.NVML_CLOCK_MEM:
            return truth.mem_clock
        raise NVMLError(pynvml.NVML_ERROR_INVALID_ARGUMENT)

    def nvmlDeviceGetFanSpeed(self, handle: FakeHandle) -> int:
        self._enter("nvmlDeviceGetFanSpeed", handle)
        if not self.profile.gpu.has_fan:
            raise self._not_supported()
        return self.truth(handle.index).fan

    def nvmlDeviceGetPerformanceState(self, handle: FakeHandle) -> int:
        self._enter("nvmlDeviceGetPerformanceState", handle)
        return self.truth(handle.index).pstate

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle: FakeHandle) -> int:
        self._enter("nvmlDeviceGetCurrentClocksEventReasons", handle)
        return self.truth(handle.index).event_reasons

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, handle: FakeHandle) -> int:
        self._enter("nvmlDeviceGetCurrentClocksThrottleReasons", handle)
        return self.truth(handle.index).event_reasons

    def nvmlDeviceGetCurrPcieLinkGeneration(self, handle: FakeHandle) -> int:
        self._enter("nvmlDeviceGetCurrPcieLinkGeneration", handle)
        return self.truth(handle.index).pcie_gen

    def nvmlDeviceGetCurrPcieLinkWidth(self, handle: FakeHandle) -> int:
        self._enter("nvmlDeviceGetCurrPcieLinkWidth", handle)
        return self.truth(handle.index).pcie_width

    def nvmlDeviceGetPcieThroughput(self, device: FakeHandle, counter: int) -> int:
        """KB/s over a 20 ms window on real cards (a blocking call: the probe prefers the byte counters)."""
        self._enter("nvmlDeviceGetPcieThroughput", device)
        load = self.truth(device.index).util / 100
        rate = 0.6e9 * load * (0.3 if counter == pynvml.NVML_PCIE_UTIL_TX_BYTES else 1.0)
        return int(rate / 1024)

    def nvmlDeviceGetTotalEccErrors(self, handle: FakeHandle, errorType: int, counterType: int) -> int:
        self._enter("nvmlDeviceGetTotalEccErrors", handle)
        if not self.profile.gpu.ecc:
            raise self._not_supported()
        truth = self.truth(handle.index)
        return truth.ecc_corrected if errorType == pynvml.NVML_MEMORY_ERROR_TYPE_CORRECTED else truth.ecc_uncorrected

    def set_ecc(self, index: int, corrected: int, uncorrected: int) -> None:
        self._gpus[index].extra.update(ecc_corrected=corrected, ecc_uncorrected=uncorrected)

    def nvmlDeviceGetFieldValues(self, handle: FakeHandle, fieldIds: list[Any]) -> Any:
        self._enter("nvmlDeviceGetFieldValues", handle)
        truth = self.truth(handle.index)
        model = self.profile.gpu
        values = (pynvml.c_nvmlFieldValue_t * len(fieldIds))()
        now_us = int(self._clock() * 1e6)
        table: dict[int, tuple[int, int] | None] = {
            pynvml.NVML_FI_DEV_PCIE_COUNT_TX_BYTES: (
                (pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG, truth.pcie_tx_bytes) if model.pcie_byte_fields else None),
            pynvml.NVML_FI_DEV_PCIE_COUNT_RX_BYTES: (
                (pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG, truth.pcie_rx_bytes) if model.pcie_byte_fields else None),
            pynvml.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX: (
                (pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG, truth.nvlink_tx_kib) if model.nvlinks else None),
            pynvml.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX: (
                (pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG, truth.nvlink_rx_kib) if model.nvlinks else None),
            pynvml.NVML_FI_DEV_NVLINK_LINK_COUNT: (
                (pynvml.NVML_VALUE_TYPE_UNSIGNED_INT, model.nvlinks) if model.nvlinks else None),
        }
        for i, field_id in enumerate(fieldIds):
            fid = field_id[0] if isinstance(field_id, tuple) else field_id
            values[i].fieldId = fid
            values[i].timestamp = now_us
            entry = table.get(fid)
            if entry is None:
                values[i].nvmlReturn = pynvml.NVML_ERROR_NOT_SUPPORTED
                continue
            values[i].nvmlReturn = pynvml.NVML_SUCCESS
            values[i].valueType = entry[0]
            if entry[0] == pynvml.NVML_VALUE_TYPE_UNSIGNED_INT:
                values[i].value.uiVal = entry[1]
            else:
                values[i].value.ullVal = entry[1]
        return values

    # ----- processes -----

    def _processes(self, handle: FakeHandle, kind: str) -> list[Any]:
        busy_memory = self.truth(handle.index).used
        out = []
        for proc in self.profile.processes:
            if proc.gpu != handle.index or proc.kind != kind:
                continue
            used = proc.used_memory_bytes
            if used is not None and kind == "compute":
                used = min(used, busy_memory)
            out.append(pynvml.nvmlFriendlyObject(
                {"pid": proc.pid, "usedGpuMemory": used, "gpuInstanceId": 0xFFFFFFFF,
                 "computeInstanceId": 0xFFFFFFFF}))
        return out

    def nvmlDeviceGetComputeRunningProcesses(self, handle: FakeHandle) -> list[Any]:
        self._enter("nvmlDeviceGetComputeRunningProcesses", handle)
        return self._processes(handle, "compute")

    def nvmlDeviceGetGraphicsRunningProcesses(self, handle: FakeHandle) -> list[Any]:
        self._enter("nvmlDeviceGetGraphicsRunningProcesses", handle)
        return self._processes(handle, "graphics")

    def nvmlDeviceGetProcessUtilization(self, handle: FakeHandle, timeStamp: int) -> list[Any]:
        self._enter("nvmlDeviceGetProcessUtilization", handle)
        truth = self.truth(handle.index)
        now_us = int(self._clock() * 1e6)
        samples = []
        for proc in self.profile.processes:
            if proc.gpu == handle.index and proc.kind == "compute" and truth.util:
                sample = pynvml.c_nvmlProcessUtilizationSample_t()
                sample.pid, sample.timeStamp = proc.pid, now_us
                sample.smUtil, sample.memUtil = truth.util, truth.mem_util
                if now_us > timeStamp:
                    samples.append(sample)
        if not samples:
            raise NVMLError(pynvml.NVML_ERROR_NOT_FOUND)  # real NVML: no sample newer than timeStamp
        return samples

    # ----- MIG -----

    def nvmlDeviceGetMigMode(self, device: FakeHandle) -> list[int]:
        self._enter("nvmlDeviceGetMigMode", device)
        if not self.profile.gpu.mig_capable:
            raise self._not_supported()
        mode = 1 if device.index in self.profile.mig_gpus else 0
        return [mode, mode]

    def nvmlDeviceGetMaxMigDeviceCount(self, device: FakeHandle) -> int:
        self._enter("nvmlDeviceGetMaxMigDeviceCount", device)
        if not self.profile.gpu.mig_capable:
            raise self._not_supported()
        return 7

    def nvmlDeviceGetMigDeviceHandleByIndex(self, device: FakeHandle, index: int) -> FakeHandle:
        self._enter("nvmlDeviceGetMigDeviceHandleByIndex", device)
        if device.index not in self.profile.mig_gpus or index >= 2:
            raise NVMLError(pynvml.NVML_ERROR_NOT_FOUND)
        return FakeHandle(device.index, index)

    # ----- GPM (Hopper and newer) -----

    def nvmlGpmQueryDeviceSupport(self, device: FakeHandle) -> Any:
        self._enter("nvmlGpmQueryDeviceSupport", device)
        support = pynvml.c_nvmlGpmSupport_t()
        support.version = pynvml.NVML_GPM_SUPPORT_VERSION
        support.isSupportedDevice = 1 if self.profile.gpu.gpm else 0
        return support

    def nvmlGpmSampleAlloc(self) -> Any:
        self._enter("nvmlGpmSampleAlloc")
        return ctypes.pointer(pynvml.struct_c_nvmlGpmSample_t())

    def nvmlGpmSampleFree(self, gpmSample: Any) -> None:
        self._enter("nvmlGpmSampleFree")
        self._gpm_samples.pop(ctypes.addressof(gpmSample.contents), None)

    def nvmlGpmSampleGet(self, device: FakeHandle, gpmSample: Any) -> Any:
        self._enter("nvmlGpmSampleGet", device)
        if not self.profile.gpu.gpm:
            raise self._not_supported()
        self._gpm_samples[ctypes.addressof(gpmSample.contents)] = _GpmSample(device.index, self._clock())
        return gpmSample

    def nvmlGpmMetricsGet(self, metricsGet: Any) -> Any:
        self._enter("nvmlGpmMetricsGet")
        first = self._gpm_samples.get(ctypes.addressof(metricsGet.sample1.contents))
        second = self._gpm_samples.get(ctypes.addressof(metricsGet.sample2.contents))
        if first is None or second is None or first.gpu != second.gpu:
            raise NVMLError(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        truth = self.truth(second.gpu)
        values = {
            pynvml.NVML_GPM_METRIC_SM_UTIL: truth.sm_activity,
            pynvml.NVML_GPM_METRIC_SM_OCCUPANCY: truth.sm_occupancy,
            pynvml.NVML_GPM_METRIC_ANY_TENSOR_UTIL: truth.tensor_activity,
            pynvml.NVML_GPM_METRIC_DRAM_BW_UTIL: truth.dram_bw_util,
        }
        for i in range(metricsGet.numMetrics):
            metric = metricsGet.metrics[i]
            if metric.metricId in values:
                metric.value = values[metric.metricId]
                metric.nvmlReturn = pynvml.NVML_SUCCESS
            else:
                metric.nvmlReturn = pynvml.NVML_ERROR_NOT_SUPPORTED
        return metricsGet

    # ----- NVLink (topology) -----

    def nvmlDeviceGetNvLinkState(self, device: FakeHandle, link: int) -> int:
        self._enter("nvmlDeviceGetNvLinkState", device)
        if not self.profile.gpu.nvlinks:
            raise self._not_supported()
        if link >= self.profile.gpu.nvlinks:
            raise NVMLError(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        down = self._gpus[device.index].extra.get("links_down", set())
        return 0 if link in down else pynvml.NVML_FEATURE_ENABLED

    def nvmlDeviceGetNvLinkRemotePciInfo(self, device: FakeHandle, link: int) -> pynvml.nvmlPciInfo_t:
        """With NVSwitch (the DGX), every link ends at a switch: two links to each of six switches."""
        self._enter("nvmlDeviceGetNvLinkRemotePciInfo", device)
        if not self.profile.gpu.nvlinks:
            raise self._not_supported()
        info = pynvml.nvmlPciInfo_t()
        info.busId = f"00000000:{0xC0 + link // 2:02X}:00.0".encode()
        return info

    def nvmlDeviceGetTopologyCommonAncestor(self, device1: FakeHandle, device2: FakeHandle) -> int:
        """NVML's own PCIe relation of two GPUs, as set by `set_common_ancestor` (else NOT_SUPPORTED)."""
        self._enter("nvmlDeviceGetTopologyCommonAncestor", device1)
        levels = self._gpus[device1.index].extra.get("ancestor", {})
        if device2.index not in levels:
            raise self._not_supported()
        return levels[device2.index]

    def set_common_ancestor(self, a: int, b: int, level: int) -> None:
        self._gpus[a].extra.setdefault("ancestor", {})[b] = level
        self._gpus[b].extra.setdefault("ancestor", {})[a] = level

    def set_link_down(self, index: int, link: int) -> None:
        self._gpus[index].extra.setdefault("links_down", set()).add(link)

    def __getattr__(self, name: str) -> Any:
        """Constants and struct classes come from pynvml itself; an nvml* function we do not fake is absent,
        as on an old driver: calling it raises FUNCTION_NOT_FOUND."""
        if name.startswith("nvml") and callable(getattr(pynvml, name, None)):
            def missing(*_args: Any, **_kwargs: Any) -> Any:
                self.calls[name] += 1
                raise NVMLError(pynvml.NVML_ERROR_FUNCTION_NOT_FOUND)
            return missing
        return getattr(pynvml, name)
