"""One GPU's reader, which owns its tiers: static facts once per handle (and again after a reset); MIG mode every
tick (what utilization means depends on it); power limit, ECC, energy, PCIe replays, MIG slices, NVLink link
states and the faults of probes/nvml/faults.py every SLOW_TIER_S, or at once when a query that used to work stops
(a change of state); live values every tick. What the card does not answer is its Capabilities'
(probes/nvml/capabilities.py); its traffic, GPM and processes are read by their own modules."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from hwtop.model.snapshot import EccCounts, GpuSnapshot, MigInstance, PcieLink, ProcessInfo
from hwtop.probes.nvml.capabilities import Query
from hwtop.probes.nvml.faults import FaultReader, GpuFaults
from hwtop.probes.nvml.gpm import GpmReader
from hwtop.probes.nvml.handle import DeviceHandle
from hwtop.probes.nvml.holders import Holders
from hwtop.probes.nvml.pcie import LinkTraffic
from hwtop.probes.nvml.processes import ProcessReader
from hwtop.probes.nvml.session import SLOW_TIER_S, NvmlSession, text
from hwtop.probes.nvml.slow import BackgroundCalls

if TYPE_CHECKING:
    from hwtop.probes.nvml.pcie_wide import CounterPoller

MAX_NVLINKS = 18
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


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


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
    faults: GpuFaults = msgspec.field(default_factory=GpuFaults)  # row remaps, NVLink errors, violation times


class DeviceReader:
    def __init__(self, session: NvmlSession, index: int, handle: Any, background: BackgroundCalls,
                 holders: Holders, checked_tick: int = -1) -> None:
        self.index = index
        self.lost = False
        self.lost_since = 0.0
        self.gpu = DeviceHandle(session, index, handle, checked_tick)
        self.static: StaticFacts | None = None
        self.slow = SlowFacts()
        self.slow_at = float("-inf")
        self.mig: bool | None = None
        self.ecc_mode: bool | None = None
        self.nvlinks: tuple[int, ...] = ()  # active link indexes
        self.gpm = GpmReader(self.gpu)
        self.traffic = LinkTraffic(self.gpu, background)
        self.processes = ProcessReader(self.gpu, holders)
        self.faults = FaultReader(self.gpu)

    @property
    def handle(self) -> Any:
        return self.gpu.handle

    @property
    def pcie_poller(self) -> CounterPoller | None:
        return self.traffic.poller

    def release(self) -> None:
        """Let go of what this GPU holds (GPM buffers, the PCIe poller): it is lost, reset or closing."""
        self.gpm.free()
        self.traffic.stop()

    def unread(self) -> GpuSnapshot:
        """What is known of a GPU that cannot be read now."""
        static = self.static or StaticFacts()
        return GpuSnapshot(self.index, static.name, static.uuid, static.pci_bus_id, lost=self.lost)

    def static_facts(self) -> StaticFacts:
        if self.static is None:
            self.static = self._read_static()
        return self.static

    def read(self, now: float, by_pid: dict[int, ProcessInfo], xid_last: int | None) -> GpuSnapshot:
        """This tick's snapshot. Raises GpuLost or SessionGone (probes/nvml/handle.py)."""
        gpu = self.gpu
        nvml = gpu.session.nvml
        static = self.static_facts()
        self._read_mig_mode()
        if gpu.state_changed or now - self.slow_at >= SLOW_TIER_S:
            self._read_slow(now)
        slow = self.slow
        memory, reserved = self._memory()
        util = gpu.call(Query.UTIL, "nvmlDeviceGetUtilizationRates")
        power = gpu.call(Query.POWER, "nvmlDeviceGetPowerUsage")
        reasons = gpu.call(Query.REASONS, "nvmlDeviceGetCurrentClocksEventReasons")
        if reasons is None and gpu.caps.lacks(Query.REASONS):
            reasons = gpu.call(Query.REASONS_OLD, "nvmlDeviceGetCurrentClocksThrottleReasons")
        pstate = gpu.call(Query.PSTATE, "nvmlDeviceGetPerformanceState")
        limit_mw = slow.power_limit_mw
        pcie_tx, pcie_rx, nvlink_tx, nvlink_rx = self.traffic.read(self.nvlinks, now)
        link = PcieLink(
            gen=gpu.call(Query.PCIE_GEN, "nvmlDeviceGetCurrPcieLinkGeneration"),
            width=gpu.call(Query.PCIE_WIDTH, "nvmlDeviceGetCurrPcieLinkWidth"),
            max_gen=static.pcie_max_gen,
            max_width=static.pcie_max_width,
            tx_bytes_per_s=pcie_tx,
            rx_bytes_per_s=pcie_rx,
        )
        processes, pids_status = self.processes.read(by_pid, static.minor)
        temperature = gpu.call(Query.TEMPERATURE, "nvmlDeviceGetTemperature", nvml.NVML_TEMPERATURE_GPU)
        sm_clock = gpu.call(Query.SM_CLOCK, "nvmlDeviceGetClockInfo", nvml.NVML_CLOCK_SM)
        mem_clock = gpu.call(Query.MEM_CLOCK, "nvmlDeviceGetClockInfo", nvml.NVML_CLOCK_MEM)
        fan = gpu.call(Query.FAN, "nvmlDeviceGetFanSpeed")
        gpm = self.gpm.read(now) if static.gpm_supported else None
        return GpuSnapshot(
            index=self.index,
            name=static.name,
            uuid=static.uuid,
            pci_bus_id=static.pci_bus_id,
            memory_total_bytes=getattr(memory, "total", None),
            memory_used_bytes=getattr(memory, "used", None),
            memory_free_bytes=getattr(memory, "free", None),
            memory_reserved_bytes=reserved,
            util_percent=None if util is None else float(util.gpu),
            memory_util_percent=None if util is None else float(util.memory),
            temperature_c=_float(temperature),
            power_w=None if power is None else power / 1000.0,
            power_limit_w=None if limit_mw is None else limit_mw / 1000.0,
            sm_clock_mhz=_float(sm_clock),
            sm_clock_max_mhz=static.sm_max_mhz,
            mem_clock_mhz=_float(mem_clock),
            mem_clock_max_mhz=static.mem_max_mhz,
            fan_percent=_float(fan),
            pstate=None if pstate is None or pstate == PSTATE_UNKNOWN else int(pstate),
            throttle_reasons=() if reasons is None else decode_throttle_reasons(int(reasons)),
            pcie=link,
            nvlink_tx_bytes_per_s=nvlink_tx,
            nvlink_rx_bytes_per_s=nvlink_rx,
            ecc=slow.ecc,
            ecc_enabled=slow.ecc_enabled,
            energy_mj=slow.energy_mj,
            xid_last=xid_last,
            pcie_replays=slow.pcie_replays,
            row_remap=slow.faults.row_remap,
            nvlink_errors=slow.faults.nvlink_errors,
            power_violation_ns=slow.faults.power_violation_ns,
            thermal_violation_ns=slow.faults.thermal_violation_ns,
            compute_capability=static.compute_capability,
            mig_enabled=self.mig,
            mig=slow.mig if self.mig else (),
            gpm=gpm,
            gpm_status=static.gpm_status if not static.gpm_supported else self.gpm.status,
            processes=processes,
            process_pids_status=pids_status,
        )

    # ----- the static tier -----

    def _read_static(self) -> StaticFacts:
        gpu = self.gpu
        nvml = gpu.session.nvml
        pci = gpu.call(Query.PCI, "nvmlDeviceGetPciInfo")
        name = gpu.call(Query.NAME, "nvmlDeviceGetName")
        uuid = gpu.call(Query.UUID, "nvmlDeviceGetUUID")
        cc = gpu.call(Query.COMPUTE_CAPABILITY, "nvmlDeviceGetCudaComputeCapability")
        facts = StaticFacts(
            name=text(name) if name is not None else None,
            uuid=text(uuid) if uuid is not None else None,
            pci_bus_id=text(pci.busId) if pci is not None else None,
            compute_capability=(int(cc[0]), int(cc[1])) if cc is not None else None,
            sm_max_mhz=_float(gpu.call(Query.SM_MAX, "nvmlDeviceGetMaxClockInfo", nvml.NVML_CLOCK_SM)),
            mem_max_mhz=_float(gpu.call(Query.MEM_MAX, "nvmlDeviceGetMaxClockInfo", nvml.NVML_CLOCK_MEM)),
            pcie_max_gen=gpu.call(Query.PCIE_MAX_GEN, "nvmlDeviceGetMaxPcieLinkGeneration"),
            pcie_max_width=gpu.call(Query.PCIE_MAX_WIDTH, "nvmlDeviceGetMaxPcieLinkWidth"),
            minor=gpu.call(Query.MINOR, "nvmlDeviceGetMinorNumber"),
        )
        support = gpu.call(Query.GPM_SUPPORT, "nvmlGpmQueryDeviceSupport")
        if support is None:
            facts.gpm_status = ("GPM needs an R520 or newer driver" if gpu.caps.lacks(Query.GPM_SUPPORT)
                                else "GPM not supported by this driver or card")
        elif not support.isSupportedDevice:
            facts.gpm_status = "GPM needs a Hopper-class or newer GPU"
        else:
            facts.gpm_supported = True
        return facts

    # ----- every tick: MIG mode -----

    def _read_mig_mode(self) -> None:
        """MIG mode, every tick: on a MIG GPU utilization is per slice and the whole-GPU query says
        NOT_SUPPORTED; switching it is a state change after which everything is asked again."""
        gpu = self.gpu
        mode = gpu.call(Query.MIG_MODE, "nvmlDeviceGetMigMode")
        if mode is None:
            if gpu.caps.skip(Query.MIG_MODE, gpu.session.now):
                self.mig = None
            return
        mig = bool(mode[0])
        if self.mig is not None and mig != self.mig:
            gpu.caps.forget()
            gpu.state_changed = True
            self.gpm.primed = False
        self.mig = mig

    # ----- the slow tier -----

    def _read_slow(self, now: float) -> None:
        gpu = self.gpu
        nvml = gpu.session.nvml
        gpu.state_changed = False
        limit = gpu.call(Query.POWER_LIMIT, "nvmlDeviceGetEnforcedPowerLimit")
        mode = gpu.call(Query.ECC_MODE, "nvmlDeviceGetEccMode")
        ecc_enabled = None if mode is None else bool(mode[0])
        if self.ecc_mode is not None and ecc_enabled is not None and ecc_enabled != self.ecc_mode:
            gpu.caps.forget()  # ECC switched (takes a reboot or reset): every answer may differ
        self.ecc_mode = ecc_enabled
        ecc = None
        if ecc_enabled:
            def count(kind: int, counter: int) -> int | None:
                return gpu.call(Query.ECC, "nvmlDeviceGetTotalEccErrors", kind, counter)

            corrected, uncorrected = nvml.NVML_MEMORY_ERROR_TYPE_CORRECTED, nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED
            ecc = EccCounts(count(corrected, nvml.NVML_VOLATILE_ECC), count(uncorrected, nvml.NVML_VOLATILE_ECC),
                            count(corrected, nvml.NVML_AGGREGATE_ECC), count(uncorrected, nvml.NVML_AGGREGATE_ECC))
        instances = []
        if self.mig:
            slots = gpu.call(Query.MIG_COUNT, "nvmlDeviceGetMaxMigDeviceCount") or 0
            for slot in range(int(slots)):
                handle = gpu.call(Query.MIG_HANDLE, "nvmlDeviceGetMigDeviceHandleByIndex", slot)
                if handle is not None:
                    instances.append(self._mig_instance(slot, handle))
        self.nvlinks = self._active_links()
        # dcgm-exporter's DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION and _PCIE_REPLAY_COUNTER, read as NVML gives them
        energy = gpu.call(Query.ENERGY, "nvmlDeviceGetTotalEnergyConsumption")
        replays = gpu.call(Query.PCIE_REPLAYS, "nvmlDeviceGetPcieReplayCounter")
        self.slow = SlowFacts(limit, ecc, ecc_enabled, tuple(instances),
                              energy_mj=None if energy is None else int(energy),
                              pcie_replays=None if replays is None else int(replays),
                              faults=self.faults.read(self.nvlinks))
        self.slow_at = now

    def _mig_instance(self, slot: int, handle: Any) -> MigInstance:
        gpu = self.gpu
        memory = gpu.call(Query.MIG_MEMORY, "nvmlDeviceGetMemoryInfo", handle=handle)
        uuid = gpu.call(Query.MIG_UUID, "nvmlDeviceGetUUID", handle=handle)
        name = gpu.call(Query.MIG_NAME, "nvmlDeviceGetName", handle=handle)
        return MigInstance(slot, text(uuid) if uuid is not None else None, text(name) if name is not None else None,
                           getattr(memory, "total", None), getattr(memory, "used", None))

    def _active_links(self) -> tuple[int, ...]:
        """The NVLink links that are up (nvmlDeviceGetNvLinkState until the card says there are no more)."""
        gpu = self.gpu
        session = gpu.session
        if gpu.caps.skip(Query.NVLINK_STATE, session.now):
            return ()
        active = []
        for link in range(MAX_NVLINKS):
            session.calls["nvmlDeviceGetNvLinkState"] += 1
            try:
                state = session.nvml.nvmlDeviceGetNvLinkState(gpu.handle, link)
            except Exception as error:  # noqa: BLE001 - INVALID_ARGUMENT past the last link
                if link == 0:
                    gpu.failed(Query.NVLINK_STATE, error)
                break
            if state:
                active.append(link)
        return tuple(active)

    # ----- every tick: memory -----

    def _memory(self) -> tuple[Any, int | None]:
        """The v2 memory info (reserved apart from used) where the driver has it, else v1."""
        gpu = self.gpu
        version = getattr(gpu.session.nvml, "nvmlMemory_v2", None)
        if version is not None:
            memory = gpu.call(Query.MEMORY_V2, "nvmlDeviceGetMemoryInfo", version)
            if memory is not None:
                return memory, getattr(memory, "reserved", None)
        else:
            gpu.caps.missing(Query.MEMORY_V2)
        return gpu.call(Query.MEMORY, "nvmlDeviceGetMemoryInfo"), None
