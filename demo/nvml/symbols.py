"""The body of each exported symbol: what the driver writes and returns, given the call's raw C arguments.

Every method is named after its C symbol and receives what nvml.h declares: a `Target` where the C function
takes an nvmlDevice_t (the dispatcher resolved the handle and checked the GPU), integers for enums and sizes,
addresses for pointers. It writes the out-parameters and returns an nvmlReturn_t.
"""

from __future__ import annotations

import ctypes
import math
import weakref
from collections import Counter
from typing import Any, NamedTuple, Protocol, cast

from hwtop.demo.nvml import abi
from hwtop.demo.nvml.abi import write, write_string
from hwtop.demo.nvml.branches import DriverBranch
from hwtop.demo.nvml.world import Card, EventQueue, GpuTruth, Target, World
from hwtop.demo.profiles import DemoProfile, GpuModel


class LibraryState(Protocol):
    """What the symbols read and change of the library they belong to (library.py's FakeNvmlLibrary)."""

    profile: DemoProfile
    driver_version: str
    driver_loaded: bool
    initialized: int
    seed: int
    world: World
    branch: DriverBranch
    field_requests: Counter[tuple[int, int, int]]
    value_types: dict[int, int]
    counter_origin: int
    gpm_samples: dict[int, tuple[int, float] | None]
    event_sets: dict[int, EventQueue]

    def handle(self, target: Target) -> int: ...
    def target_of(self, address: int) -> Target | None: ...
    def keep(self, buffer: Any) -> None: ...
    def card(self, target: Target) -> Card: ...
    def now(self) -> float: ...
    def timestamp_us(self, t: float) -> int: ...

CLOCK_GRAPHICS, CLOCK_SM, CLOCK_MEM = 0, 1, 2
MIG_SLICES = (("1g.10gb", 10), ("3g.40gb", 40))  # two GPU instances in the demo, GiB each
SAMPLE_BUFFER_S = 20  # per-process utilization samples the driver keeps, one per second
ULL_MASK = (1 << 64) - 1
# A real R580 driver answers the PCIe byte counters as 32-bit (valueType 1: unsigned int), which wrap every 4 GiB
# (tests/fixtures/gpu-capture/h200-r580); every branch that has them is assumed to (R555/R570 were not captured).
# The NVLink byte counters, not captured yet, stay 64-bit.
_DEFAULT_VALUE_TYPE = {abi.FI_PCIE_COUNT_TX_BYTES: abi.VALUE_UINT, abi.FI_PCIE_COUNT_RX_BYTES: abi.VALUE_UINT}
_WIDTH = {abi.VALUE_UINT: 32, abi.VALUE_ULONG: 64, abi.VALUE_ULONGLONG: 64, abi.VALUE_USHORT: 16,
          abi.VALUE_SINT: 32, abi.VALUE_SLONGLONG: 64}
# the NVLink counters' names by (field, link), made once (a read asks for two dozen a card)
_NVLINK_COUNTER = {(field, link): f"nvl_{'tx' if field == abi.FI_NVLINK_THROUGHPUT_DATA_TX else 'rx'}{link}"
                   for field in (abi.FI_NVLINK_THROUGHPUT_DATA_TX, abi.FI_NVLINK_THROUGHPUT_DATA_RX)
                   for link in range(18)}
_MEMBER = {abi.VALUE_DOUBLE: "dVal", abi.VALUE_UINT: "uiVal", abi.VALUE_ULONG: "ulVal",
           abi.VALUE_ULONGLONG: "ullVal", abi.VALUE_SLONGLONG: "sllVal", abi.VALUE_SINT: "siVal",
           abi.VALUE_USHORT: "usVal"}


def fully_supported(model: GpuModel) -> bool:
    """What NVML calls a "fully supported" device (data-centre and professional cards, not GeForce), for the
    queries it answers only there (nvmlDeviceGetViolationStatus): the profiles' cards with ECC at all."""
    return model.ecc


def row_remapper(model: GpuModel) -> bool:
    """Cards with a row remapper: NVIDIA's data-centre cards with HBM from A100 on (compute capability 8.0, and 9.0
    and newer); the H200 of tests/fixtures/gpu-capture/h200-r580 showed its remapped rows in nvidia-smi -q. Whether
    the GDDR6 professional Ampere cards (8.6, the A4000) answer too was not measured: the fake says NOT_SUPPORTED."""
    return model.ecc and (model.compute_capability == (8, 0) or model.compute_capability >= (9, 0))


class _FieldCall(NamedTuple):
    """What one nvmlDeviceGetFieldValues call reads of the library for each of its values, read once."""

    card: Card
    sampled_at: float
    stamp: int
    loads: dict[float, float]  # the card's load by instant, for every counter this call reads
    requests: Counter[tuple[int, int, int]]
    world: World
    missing: frozenset[int]
    value_types: dict[int, int]
    origin: int


class Symbols:
    def __init__(self, library: LibraryState) -> None:
        # Weakly: the library holds its symbols, so no cycle keeps a dropped library for the garbage collector.
        self.lib = cast(LibraryState, weakref.proxy(library))
        self._world = library.world  # its cards, asked of by nearly every call (no cycle: the world holds no library)
        self._error_strings: dict[int, ctypes.Array[ctypes.c_char]] = {}
        # card -> (every input of its utilization samples at a whole second, the samples): pynvml asks twice a read
        # (the size, then the fill) and a tick reads each card once; the samples move once a second
        self._samples: dict[int, tuple[tuple[object, ...], list[tuple[int, int, int, int]]]] = {}
        # card -> (its loads, second -> (utilization, timestamp))
        self._utils: dict[int, tuple[tuple[object, ...], dict[int, tuple[int, int]]]] = {}

    # ----- library -----

    def nvmlInitWithFlags(self, flags: int) -> int:
        if not self.lib.driver_loaded:
            return abi.DRIVER_NOT_LOADED
        self.lib.initialized += 1
        return abi.SUCCESS

    def nvmlInit_v2(self) -> int:
        return self.nvmlInitWithFlags(0)

    def nvmlShutdown(self) -> int:
        self.lib.initialized -= 1
        return abi.SUCCESS

    def nvmlErrorString(self, code: int) -> int:
        text = self._error_strings.get(code)
        if text is None:
            text = self._error_strings[code] = ctypes.create_string_buffer(
                abi.ERROR_TEXT.get(code, "Unknown Error").encode())
        return ctypes.addressof(text)

    def nvmlSystemGetDriverVersion(self, buffer: int, length: int) -> int:
        return write_string(buffer, length, self.lib.driver_version)

    def nvmlSystemGetCudaDriverVersion(self, version: int) -> int:
        write(version, ctypes.c_int, self.lib.profile.cuda_driver_version)
        return abi.SUCCESS

    def nvmlDeviceGetCount_v2(self, count: int) -> int:
        write(count, ctypes.c_uint, len(self.lib.world.cards))
        return abi.SUCCESS

    def nvmlDeviceGetHandleByIndex_v2(self, index: int, device: int) -> int:
        write(device, ctypes.c_void_p, self.lib.handle(Target(index)))
        return abi.SUCCESS

    # ----- identity -----

    def nvmlDeviceGetName(self, target: Target, buffer: int, length: int) -> int:
        name = self.lib.profile.gpu.name
        if target.mig_slot is not None:
            name = f"{name} MIG {MIG_SLICES[target.mig_slot][0]}"
        return write_string(buffer, length, name)

    def nvmlDeviceGetUUID(self, target: Target, buffer: int, length: int) -> int:
        import random

        rng = random.Random(f"uuid:{self.lib.profile.name}:{self.lib.seed}:{target.gpu}")
        hexes = "".join(rng.choice("0123456789abcdef") for _ in range(32))
        uuid = f"{hexes[:8]}-{hexes[8:12]}-{hexes[12:16]}-{hexes[16:20]}-{hexes[20:]}"
        text = f"MIG-{uuid[:-2]}{target.mig_slot:02d}" if target.mig_slot is not None else f"GPU-{uuid}"
        return write_string(buffer, length, text)

    def nvmlDeviceGetPciInfo_v3(self, target: Target, info: int) -> int:
        pci = abi.struct_at(info, abi.PciInfo)
        bus_id = self.lib.profile.bus_id(target.gpu)
        domain, bus = bus_id.split(":")[:2]
        pci.busId = bus_id.encode()  # type: ignore[attr-defined]
        pci.busIdLegacy = bus_id[4:].encode()  # type: ignore[attr-defined]
        pci.domain, pci.bus, pci.device = int(domain, 16), int(bus, 16), 0  # type: ignore[attr-defined]
        pci.pciDeviceId = 0x20B210DE  # type: ignore[attr-defined]
        return abi.SUCCESS

    def nvmlDeviceGetMinorNumber(self, target: Target, minor: int) -> int:
        write(minor, ctypes.c_uint, target.gpu)
        return abi.SUCCESS

    def nvmlDeviceGetCudaComputeCapability(self, target: Target, major: int, minor: int) -> int:
        cc = self.lib.profile.gpu.compute_capability
        write(major, ctypes.c_int, cc[0])
        write(minor, ctypes.c_int, cc[1])
        return abi.SUCCESS

    def nvmlDeviceGetMaxClockInfo(self, target: Target, kind: int, clock: int) -> int:
        model = self.lib.profile.gpu
        value = {CLOCK_GRAPHICS: model.sm_max_mhz, CLOCK_SM: model.sm_max_mhz, CLOCK_MEM: model.mem_max_mhz}.get(kind)
        if value is None:
            return abi.INVALID_ARGUMENT
        write(clock, ctypes.c_uint, value)
        return abi.SUCCESS

    def nvmlDeviceGetMaxPcieLinkGeneration(self, target: Target, gen: int) -> int:
        write(gen, ctypes.c_uint, self.lib.profile.gpu.pcie_max_gen)
        return abi.SUCCESS

    def nvmlDeviceGetMaxPcieLinkWidth(self, target: Target, width: int) -> int:
        write(width, ctypes.c_uint, self.lib.profile.gpu.pcie_max_width)
        return abi.SUCCESS

    def nvmlDeviceGetEnforcedPowerLimit(self, target: Target, limit: int) -> int:
        write(limit, ctypes.c_uint, self._truth(target).power_limit_mw)
        return abi.SUCCESS

    # ----- live values -----

    def _card(self, target: Target) -> Card:
        return self._world.cards[target.gpu]

    def _truth(self, target: Target) -> GpuTruth:
        return self._world.truth(self._world.cards[target.gpu], self.lib.now(), counters=False)

    def nvmlDeviceGetMemoryInfo(self, target: Target, memory: int) -> int:
        out = abi.struct_at(memory, abi.Memory)
        if target.mig_slot is not None:
            total = MIG_SLICES[target.mig_slot][1] * 1024**3
            out.total, out.used, out.free = total, total // 4, total - total // 4  # type: ignore[attr-defined]
            return abi.SUCCESS
        truth = self._truth(target)
        used = truth.used + truth.reserved  # the v1 struct folds reserved memory into "used", as drivers do
        out.total, out.used, out.free = truth.total, used, truth.total - used  # type: ignore[attr-defined]
        return abi.SUCCESS

    def nvmlDeviceGetMemoryInfo_v2(self, target: Target, memory: int) -> int:
        out = abi.struct_at(memory, abi.MemoryV2)
        if out.version != abi.MEMORY_V2_VERSION:  # type: ignore[attr-defined]
            return abi.ARGUMENT_VERSION_MISMATCH
        if target.mig_slot is not None:
            return abi.NOT_SUPPORTED
        truth = self._truth(target)
        out.total, out.reserved, out.used = truth.total, truth.reserved, truth.used  # type: ignore[attr-defined]
        out.free = truth.total - truth.reserved - truth.used  # type: ignore[attr-defined]
        return abi.SUCCESS

    def nvmlDeviceGetUtilizationRates(self, target: Target, utilization: int) -> int:
        if self._card(target).mig:
            return abi.NOT_SUPPORTED  # NVML: not supported on a MIG-enabled GPU
        truth = self._truth(target)
        out = abi.struct_at(utilization, abi.Utilization)
        out.gpu, out.memory = truth.util, truth.mem_util  # type: ignore[attr-defined]
        return abi.SUCCESS

    def nvmlDeviceGetTemperature(self, target: Target, sensor: int, temperature: int) -> int:
        if sensor != 0:
            return abi.INVALID_ARGUMENT
        write(temperature, ctypes.c_uint, self._truth(target).temperature)
        return abi.SUCCESS

    def nvmlDeviceGetPowerUsage(self, target: Target, power: int) -> int:
        write(power, ctypes.c_uint, self._truth(target).power_mw)
        return abi.SUCCESS

    def nvmlDeviceGetClockInfo(self, target: Target, kind: int, clock: int) -> int:
        truth = self._truth(target)
        value = {CLOCK_GRAPHICS: truth.sm_clock, CLOCK_SM: truth.sm_clock, CLOCK_MEM: truth.mem_clock}.get(kind)
        if value is None:
            return abi.INVALID_ARGUMENT
        write(clock, ctypes.c_uint, value)
        return abi.SUCCESS

    def nvmlDeviceGetFanSpeed(self, target: Target, speed: int) -> int:
        if not self.lib.profile.gpu.has_fan:
            return abi.NOT_SUPPORTED
        write(speed, ctypes.c_uint, self._truth(target).fan)
        return abi.SUCCESS

    def nvmlDeviceGetPerformanceState(self, target: Target, pstate: int) -> int:
        write(pstate, ctypes.c_uint, self._truth(target).pstate)
        return abi.SUCCESS

    def nvmlDeviceGetCurrentClocksEventReasons(self, target: Target, reasons: int) -> int:
        write(reasons, ctypes.c_ulonglong, self._truth(target).event_reasons)
        return abi.SUCCESS

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, target: Target, reasons: int) -> int:
        return self.nvmlDeviceGetCurrentClocksEventReasons(target, reasons)

    def nvmlDeviceGetCurrPcieLinkGeneration(self, target: Target, gen: int) -> int:
        write(gen, ctypes.c_uint, self._truth(target).pcie_gen)
        return abi.SUCCESS

    def nvmlDeviceGetCurrPcieLinkWidth(self, target: Target, width: int) -> int:
        write(width, ctypes.c_uint, self._truth(target).pcie_width)
        return abi.SUCCESS

    def nvmlDeviceGetPcieThroughput(self, target: Target, counter: int, value: int) -> int:
        """KB/s over the 20 ms the call samples for (the rate is constant within each second here)."""
        truth = self._truth(target)
        if counter not in (0, 1):
            return abi.INVALID_ARGUMENT
        rate = truth.pcie_tx_rate if counter == 0 else truth.pcie_rx_rate
        write(value, ctypes.c_uint, int(rate / 1000))  # "KB" of 1000 bytes, as a real R580 counts them
        return abi.SUCCESS

    # ----- field values -----

    def nvmlDeviceGetFieldValues(self, target: Target, count: int, values: int) -> int:
        if count <= 0 or not values:
            return abi.INVALID_ARGUMENT
        array = ctypes.cast(values, ctypes.POINTER(abi.FieldValue))
        card = self._card(target)
        lib = self.lib
        sampled_at = lib.now() - card.field_lag_s
        call = _FieldCall(card, sampled_at, lib.timestamp_us(sampled_at), {}, lib.field_requests, self._world,
                          lib.branch.missing_fields, lib.value_types, lib.counter_origin)
        for i in range(count):
            self._field(call, array[i])
        return abi.SUCCESS

    def _field(self, call: _FieldCall, value: abi.FieldValue) -> None:
        card = call.card
        field_id, scope = int(value.fieldId), int(value.scopeId)  # type: ignore[attr-defined]
        call.requests[(card.index, field_id, scope)] += 1
        value.timestamp = call.stamp  # type: ignore[attr-defined]
        value.latencyUsec = 0  # type: ignore[attr-defined]
        world, links = call.world, card.model.nvlinks
        counter_name = None
        if field_id in call.missing:
            code = abi.NOT_SUPPORTED
        elif field_id == abi.FI_NVLINK_LINK_COUNT:
            code = abi.SUCCESS if links else abi.NOT_SUPPORTED
            self._put(value, abi.VALUE_UINT, len(world.active_links(card)))
        elif field_id in (abi.FI_NVLINK_THROUGHPUT_DATA_TX, abi.FI_NVLINK_THROUGHPUT_DATA_RX):
            code = abi.SUCCESS if scope < links else abi.INVALID_ARGUMENT if links else abi.NOT_SUPPORTED
            counter_name = _NVLINK_COUNTER.get((field_id, scope)) or \
                f"nvl_{'tx' if field_id == abi.FI_NVLINK_THROUGHPUT_DATA_TX else 'rx'}{scope}"
        elif field_id in (abi.FI_PCIE_COUNT_TX_BYTES, abi.FI_PCIE_COUNT_RX_BYTES):
            code = abi.SUCCESS
            counter_name = "pcie_tx" if field_id == abi.FI_PCIE_COUNT_TX_BYTES else "pcie_rx"
        elif field_id in abi.FI_NVLINK_ERROR_TOTALS:
            code = abi.SUCCESS if links else abi.NOT_SUPPORTED
            counter = abi.FI_NVLINK_ERROR_TOTALS[field_id]
            self._put(value, abi.VALUE_ULONGLONG,
                      sum(n for (_, kind), n in card.nvlink_errors.items() if kind == counter))
        else:
            code = abi.NOT_SUPPORTED
        value.nvmlReturn = code  # type: ignore[attr-defined]
        if code == abi.SUCCESS and counter_name is not None:
            kind = call.value_types.get(field_id, _DEFAULT_VALUE_TYPE.get(field_id, abi.VALUE_ULONGLONG))
            raw = world.counter(card, counter_name, call.sampled_at, call.loads) + call.origin
            self._put(value, kind, raw & ((1 << _WIDTH.get(kind, 64)) - 1))  # counters wrap at their width

    @staticmethod
    def _put(value: abi.FieldValue, kind: int, number: int) -> None:
        value.valueType = kind  # type: ignore[attr-defined]
        setattr(value.value, _MEMBER[kind], float(number) if kind == abi.VALUE_DOUBLE else number)  # type: ignore[attr-defined]

    # ----- ECC, MIG -----

    def nvmlDeviceGetEccMode(self, target: Target, current: int, pending: int) -> int:
        card = self._card(target)
        if not card.model.ecc:
            return abi.NOT_SUPPORTED
        write(current, ctypes.c_uint, int(card.ecc_enabled))
        write(pending, ctypes.c_uint, int(card.ecc_enabled))
        return abi.SUCCESS

    def nvmlDeviceGetTotalEnergyConsumption(self, target: Target, energy: int) -> int:
        card = self._card(target)
        if card.model.compute_capability < (7, 0):
            return abi.NOT_SUPPORTED  # NVML: Volta or newer
        write(energy, ctypes.c_ulonglong, self.lib.world.counter(card, "energy", self.lib.now()))
        return abi.SUCCESS

    def nvmlDeviceGetPcieReplayCounter(self, target: Target, value: int) -> int:
        write(value, ctypes.c_uint, self._card(target).pcie_replays)
        return abi.SUCCESS

    # ----- faults: the row remapper, violation times -----

    def nvmlDeviceGetRemappedRows(self, target: Target, correctable: int, uncorrectable: int, pending: int,
                                  failed: int) -> int:
        card = self._card(target)
        if not row_remapper(card.model) or target.mig_slot is not None:
            return abi.NOT_SUPPORTED
        write(correctable, ctypes.c_uint, card.remapped_rows[0])
        write(uncorrectable, ctypes.c_uint, card.remapped_rows[1])
        write(pending, ctypes.c_uint, int(card.remap_pending))
        write(failed, ctypes.c_uint, int(card.remap_failed))
        return abi.SUCCESS

    def nvmlDeviceGetViolationStatus(self, target: Target, policy: int, violation: int) -> int:
        card = self._card(target)
        if policy not in abi.PERF_POLICIES:
            return abi.INVALID_ARGUMENT
        if not fully_supported(card.model) or target.mig_slot is not None:
            return abi.NOT_SUPPORTED
        if policy not in (abi.PERF_POLICY_POWER, abi.PERF_POLICY_THERMAL):
            return abi.NOT_SUPPORTED  # the fake keeps the time of these two only
        out = abi.struct_at(violation, abi.ViolationTime)
        now = self.lib.now()
        out.referenceTime = self.lib.timestamp_us(now)  # type: ignore[attr-defined]
        out.violationTime = self._world.violation_ns(  # type: ignore[attr-defined]
            card, "power" if policy == abi.PERF_POLICY_POWER else "thermal", now)
        return abi.SUCCESS

    # ----- events (only critical XIDs) -----

    def nvmlEventSetCreate(self, event_set: int) -> int:
        buffer = ctypes.create_string_buffer(16)  # an opaque struct the caller never reads
        self.lib.keep(buffer)
        address = ctypes.addressof(buffer)
        self.lib.event_sets[address] = EventQueue()
        write(event_set, ctypes.c_void_p, address)
        return abi.SUCCESS

    def nvmlDeviceRegisterEvents(self, target: Target, event_types: int, event_set: int) -> int:
        queue = self.lib.event_sets.get(event_set)
        if queue is None:
            return abi.INVALID_ARGUMENT
        if event_types & ~abi.EVENT_XID_CRITICAL or target.mig_slot is not None:
            return abi.NOT_SUPPORTED  # the fake's driver reports XIDs only, of whole GPUs
        queue.gpus.add(target.gpu)
        return abi.SUCCESS

    def nvmlEventSetWait_v2(self, event_set: int, data: int, timeout_ms: int) -> int:
        queue = self.lib.event_sets.get(event_set)
        if queue is None:
            return abi.INVALID_ARGUMENT
        if not queue.events:
            return abi.TIMEOUT  # the fake never blocks: nothing pending is a timeout, whatever the wait asked
        gpu, xid = queue.events.popleft()
        event = abi.struct_at(data, abi.EventData)
        event.device = self.lib.handle(Target(gpu))  # type: ignore[attr-defined]
        event.eventType, event.eventData = abi.EVENT_XID_CRITICAL, xid  # type: ignore[attr-defined]
        event.gpuInstanceId = event.computeInstanceId = abi.NO_INSTANCE  # type: ignore[attr-defined]
        return abi.SUCCESS

    def nvmlEventSetFree(self, event_set: int) -> int:
        if self.lib.event_sets.pop(event_set, None) is None:
            return abi.INVALID_ARGUMENT
        return abi.SUCCESS

    def nvmlDeviceGetTotalEccErrors(self, target: Target, error_type: int, counter_type: int, count: int) -> int:
        card = self._card(target)
        if not card.model.ecc or not card.ecc_enabled:
            return abi.NOT_SUPPORTED  # NVML: requires ECC mode to be enabled
        write(count, ctypes.c_ulonglong, card.ecc_corrected if error_type == 0 else card.ecc_uncorrected)
        return abi.SUCCESS

    def nvmlDeviceGetMigMode(self, target: Target, current: int, pending: int) -> int:
        card = self._card(target)
        if not card.model.mig_capable:
            return abi.NOT_SUPPORTED
        write(current, ctypes.c_uint, int(card.mig))
        write(pending, ctypes.c_uint, int(card.mig))
        return abi.SUCCESS

    def nvmlDeviceGetMaxMigDeviceCount(self, target: Target, count: int) -> int:
        if not self._card(target).model.mig_capable:
            return abi.NOT_SUPPORTED
        write(count, ctypes.c_uint, 7)
        return abi.SUCCESS

    def nvmlDeviceGetMigDeviceHandleByIndex(self, target: Target, index: int, device: int) -> int:
        card = self._card(target)
        if not card.model.mig_capable:
            return abi.NOT_SUPPORTED
        if not card.mig or index >= len(MIG_SLICES):
            return abi.NOT_FOUND
        write(device, ctypes.c_void_p, self.lib.handle(Target(target.gpu, index)))
        return abi.SUCCESS

    # ----- processes -----

    def _running(self, target: Target, kind: str, layout: type[ctypes.Structure], count: int, infos: int) -> int:
        card = self._card(target)
        listed = [p for p in card.processes if kind in p.kind.split("+")]
        room = ctypes.cast(count, ctypes.POINTER(ctypes.c_uint))[0]
        write(count, ctypes.c_uint, len(listed))
        if not listed:
            return abi.SUCCESS
        if not infos or room < len(listed):
            return abi.INSUFFICIENT_SIZE
        array = ctypes.cast(infos, ctypes.POINTER(layout))
        now = self.lib.now()
        for i, process in enumerate(listed):
            used = self.lib.world.process_memory(card, process, now)
            array[i].pid = process.pid  # type: ignore[attr-defined]
            array[i].usedGpuMemory = abi.NOT_AVAILABLE_ULL if used is None else used  # type: ignore[attr-defined]
            if layout is abi.ProcessInfoV2:
                array[i].gpuInstanceId = array[i].computeInstanceId = 0xFFFFFFFF  # type: ignore[attr-defined]
        return abi.SUCCESS

    def nvmlDeviceGetComputeRunningProcesses(self, target: Target, count: int, infos: int) -> int:
        return self._running(target, "compute", abi.ProcessInfoV1, count, infos)

    def nvmlDeviceGetComputeRunningProcesses_v2(self, target: Target, count: int, infos: int) -> int:
        return self._running(target, "compute", abi.ProcessInfoV2, count, infos)

    def nvmlDeviceGetComputeRunningProcesses_v3(self, target: Target, count: int, infos: int) -> int:
        return self._running(target, "compute", abi.ProcessInfoV2, count, infos)

    def nvmlDeviceGetGraphicsRunningProcesses(self, target: Target, count: int, infos: int) -> int:
        return self._running(target, "graphics", abi.ProcessInfoV1, count, infos)

    def nvmlDeviceGetGraphicsRunningProcesses_v2(self, target: Target, count: int, infos: int) -> int:
        return self._running(target, "graphics", abi.ProcessInfoV2, count, infos)

    def nvmlDeviceGetGraphicsRunningProcesses_v3(self, target: Target, count: int, infos: int) -> int:
        return self._running(target, "graphics", abi.ProcessInfoV2, count, infos)

    def nvmlDeviceGetProcessUtilization(self, target: Target, samples: int, count: int, last_seen: int) -> int:
        """One sample per compute process per second, the last SAMPLE_BUFFER_S seconds of them kept; those
        newer than `last_seen` (µs), unless the card has the "stale" quirk."""
        card = self._card(target)
        if card.mig:
            return abi.NOT_SUPPORTED
        rows = list(self.remembered_samples(card, self.lib.now()))
        if "stale" not in card.sample_quirks:
            rows = [r for r in rows if r[1] > last_seen]
            rows.reverse()  # oldest first
        if "overshoot" in card.sample_quirks and rows:
            newest = max(range(len(rows)), key=lambda i: rows[i][1])
            pid, stamp, _, mem = rows[newest]
            rows[newest] = (pid, stamp, 104, mem)
        if not rows:
            return abi.NOT_FOUND  # NVML: no sample newer than lastSeenTimeStamp
        room = ctypes.cast(count, ctypes.POINTER(ctypes.c_uint))[0]
        write(count, ctypes.c_uint, len(rows))
        if not samples or room < len(rows):
            return abi.INSUFFICIENT_SIZE
        array = ctypes.cast(samples, ctypes.POINTER(abi.ProcessUtilizationSample))
        for i, (pid, stamp, sm, mem) in enumerate(rows):
            array[i].pid, array[i].timeStamp = pid, stamp  # type: ignore[attr-defined]
            array[i].smUtil, array[i].memUtil = sm, mem  # type: ignore[attr-defined]
            array[i].encUtil = array[i].decUtil = 0  # type: ignore[attr-defined]
        return abi.SUCCESS

    def remembered_samples(self, card: Card, now: float) -> list[tuple[int, int, int, int]]:
        """`samples(card, now)`, remembered while every input it reads is the same (callers must not change it)."""
        computing = tuple(p.pid for p in card.processes if "compute" in p.kind)
        loads = (card.busy, tuple(card.load_changes))  # all a second's load is read from (the world's own aside)
        key = (math.floor(now), loads, computing)
        known = self._samples.get(card.index)
        if known is None or known[0] != key:
            utils = self._utils.get(card.index)
            if utils is None or utils[0] != loads:
                utils = self._utils[card.index] = (loads, {})
            for second in [s for s in utils[1] if s <= math.floor(now) - SAMPLE_BUFFER_S]:
                del utils[1][second]  # only the seconds the buffer holds are kept
            known = self._samples[card.index] = (key, self.samples(card, now, utils[1]))
        return known[1]

    def samples(self, card: Card, now: float,
                utils: dict[int, tuple[int, int]] | None = None) -> list[tuple[int, int, int, int]]:
        """(pid, timestamp µs, sm %, memory %) newest first: one per compute process per second of the last
        SAMPLE_BUFFER_S in which the card was busy. Reads the whole seconds' loads (the load forced then, the card
        busy or not) and the compute processes' pids. `utils`: each second's (utilization, timestamp), known from the
        last reads under the same loads (a second's is made once, not once a read)."""
        world = self.lib.world
        computing = [p for p in card.processes if "compute" in p.kind]
        rows: list[tuple[int, int, int, int]] = []  # pid, timestamp, sm, mem
        for second in range(math.floor(now), math.floor(now) - SAMPLE_BUFFER_S, -1):
            if second < 0:
                break
            known = utils.get(second) if utils is not None else None
            if known is None:
                known = (round(100 * world.load(card, float(second))), self.lib.timestamp_us(second))
                if utils is not None:
                    utils[second] = known
            util, stamp = known
            if not util:
                continue
            for process in computing:
                rows.append((process.pid, stamp, util // len(computing), round(util * 0.55) // len(computing)))
        return rows

    # ----- GPM -----

    def nvmlGpmQueryDeviceSupport(self, target: Target, support: int) -> int:
        out = abi.struct_at(support, abi.GpmSupport)
        if out.version != abi.GPM_SUPPORT_VERSION:  # type: ignore[attr-defined]
            return abi.ARGUMENT_VERSION_MISMATCH
        out.isSupportedDevice = int(self.lib.profile.gpu.gpm)  # type: ignore[attr-defined]
        return abi.SUCCESS

    def nvmlGpmSampleAlloc(self, sample: int) -> int:
        buffer = ctypes.create_string_buffer(64)
        self.lib.keep(buffer)
        address = ctypes.addressof(buffer)
        self.lib.gpm_samples[address] = None
        write(sample, ctypes.c_void_p, address)
        return abi.SUCCESS

    def nvmlGpmSampleFree(self, sample: int) -> int:
        if sample not in self.lib.gpm_samples:
            return abi.INVALID_ARGUMENT
        del self.lib.gpm_samples[sample]
        return abi.SUCCESS

    def nvmlGpmSampleGet(self, target: Target, sample: int) -> int:
        card = self._card(target)
        if sample not in self.lib.gpm_samples:
            return abi.INVALID_ARGUMENT
        if not card.model.gpm or card.mig:
            return abi.NOT_SUPPORTED  # MIG mode: the per-instance nvmlGpmMigSampleGet is the one that works
        self.lib.gpm_samples[sample] = (target.gpu, self.lib.now())
        return abi.SUCCESS

    def nvmlGpmMetricsGet(self, request: int) -> int:
        head = abi.struct_at(request, abi.GpmMetricsGetHead)
        if head.version != abi.GPM_METRICS_GET_VERSION:  # type: ignore[attr-defined]
            return abi.ARGUMENT_VERSION_MISMATCH
        first = self.lib.gpm_samples.get(head.sample1 or 0)  # type: ignore[attr-defined]
        second = self.lib.gpm_samples.get(head.sample2 or 0)  # type: ignore[attr-defined]
        if first is None or second is None or first[0] != second[0] or second[1] <= first[1]:
            return abi.INVALID_ARGUMENT
        truth = self.lib.world.truth(self.lib.world.cards[second[0]], second[1], counters=False)
        values = {abi.GPM_SM_UTIL: truth.sm_activity, abi.GPM_SM_OCCUPANCY: truth.sm_occupancy,
                  abi.GPM_ANY_TENSOR_UTIL: truth.tensor_activity, abi.GPM_DRAM_BW_UTIL: truth.dram_bw_util}
        metrics = ctypes.cast(request + abi.metrics_offset(), ctypes.POINTER(abi.GpmMetric))
        for i in range(int(head.numMetrics)):  # type: ignore[attr-defined]
            value = values.get(int(metrics[i].metricId))  # type: ignore[attr-defined]
            metrics[i].nvmlReturn = abi.NOT_SUPPORTED if value is None else abi.SUCCESS  # type: ignore[attr-defined]
            metrics[i].value = value or 0.0  # type: ignore[attr-defined]
        return abi.SUCCESS

    # ----- NVLink, topology -----

    def nvmlDeviceGetNvLinkState(self, target: Target, link: int, active: int) -> int:
        card = self._card(target)
        if not card.model.nvlinks:
            return abi.NOT_SUPPORTED
        if link >= card.model.nvlinks:
            return abi.INVALID_ARGUMENT
        write(active, ctypes.c_uint, 0 if link in card.links_down else 1)
        return abi.SUCCESS

    def nvmlDeviceGetNvLinkRemotePciInfo_v2(self, target: Target, link: int, info: int) -> int:
        """With NVSwitch (the DGX), every link ends at a switch: two links to each of six switches."""
        card = self._card(target)
        if not card.model.nvlinks:
            return abi.NOT_SUPPORTED
        if link >= card.model.nvlinks:
            return abi.INVALID_ARGUMENT
        pci = abi.struct_at(info, abi.PciInfo)
        pci.busId = f"00000000:{0xC0 + link // 2:02X}:00.0".encode()  # type: ignore[attr-defined]
        return abi.SUCCESS

    def nvmlDeviceGetNvLinkErrorCounter(self, target: Target, link: int, counter: int, value: int) -> int:
        """The driver's count since it loaded; a link that is down keeps its counts."""
        card = self._card(target)
        if not card.model.nvlinks:
            return abi.NOT_SUPPORTED
        if link >= card.model.nvlinks or counter >= abi.NVLINK_ERROR_COUNT:
            return abi.INVALID_ARGUMENT
        write(value, ctypes.c_ulonglong, card.nvlink_errors.get((link, counter), 0))
        return abi.SUCCESS

    def nvmlDeviceGetTopologyCommonAncestor(self, target: Target, other: int, level: int) -> int:
        peer = self.lib.target_of(int(other or 0))
        if peer is None:
            return abi.INVALID_ARGUMENT
        levels = self._card(target).ancestors
        if peer.gpu not in levels:
            return abi.NOT_SUPPORTED
        write(level, ctypes.c_uint, levels[peer.gpu])
        return abi.SUCCESS

