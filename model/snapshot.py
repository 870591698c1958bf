"""The typed snapshot model: one immutable `Snapshot` per tick, in raw SI units.

Units are bytes, bytes/s, percent (0-100), watts, degrees Celsius and MHz. `None` always means
"not available on this machine (or not yet: a rate needs two samples)", never zero.
Sequences are tuples so that a snapshot can be shared between threads without copying.

Records are msgspec Structs (model/record.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import msgspec

import hwtop
from hwtop.model.owner import Owner
from hwtop.model.record import Record

if TYPE_CHECKING:  # a focused job's and the embedded workload's models load with them, not with every tick
    import hwtop.model.job
    import hwtop.model.workload

# Their records are named in full (hwtop.model.job.JobSnapshot): msgspec, decoding a recording (model/serial.py,
# which imports both), resolves a field's type in this module's namespace, where `hwtop` is and they are not.

SCHEMA = "hwtop.snapshot/1"


class HostInfo(Record, frozen=True):
    hostname: str
    kernel: str
    uptime_s: float | None


class CoreLoad(Record, frozen=True):
    """One logical core over the last interval; the split adds up to `percent` (plus nice in user)."""

    index: int
    numa_node: int
    percent: float | None
    user: float | None = None
    system: float | None = None
    iowait: float | None = None
    irq: float | None = None
    steal: float | None = None
    mhz: float | None = None  # read at most every 5 s (probes/cpu.py FREQ_EVERY_S)


class CpuSnapshot(Record, frozen=True):
    cores: tuple[CoreLoad, ...]
    percent: float | None
    load_average: tuple[float, float, float] | None
    logical_cores: int
    physical_cores: int | None = None
    model: str | None = None
    l2_cache_bytes: int | None = None
    l3_cache_bytes: int | None = None


class MemorySnapshot(Record, frozen=True):
    """Host RAM. "Used" means one thing everywhere in hwtop (this panel, the NUMA lines, the topology screen,
    `hwtop topo`, JSON, the report): total − available, where available is the kernel's MemAvailable, the memory a
    new program could have without swapping (free pages plus the page cache and slab it could reclaim). It is
    `free`'s "used" and htop's: what programs hold, not the cache that would be given back on demand."""

    total_bytes: int
    available_bytes: int
    used_bytes: int
    swap_total_bytes: int
    swap_used_bytes: int

    @property
    def used_percent(self) -> float:
        return 100.0 * (self.total_bytes - self.available_bytes) / self.total_bytes if self.total_bytes else 0.0


class NumaNode(Record, frozen=True):
    """One NUMA node. `memory_free_bytes` is the node's MemFree (numactl's "free": page cache counts as used);
    `memory_available_bytes` is the machine's MemAvailable shared among the nodes (the kernel gives no per-node
    figure: see probes/numa.py), so the nodes' figures add up to the machine's and `memory_used_bytes` (total −
    available) means what MemorySnapshot's "used" means."""

    index: int
    cpus: tuple[int, ...]
    memory_total_bytes: int | None
    memory_free_bytes: int | None
    distances: tuple[int, ...]
    memory_available_bytes: int | None = None
    memory_used_bytes: int | None = None


class NumaSnapshot(Record, frozen=True):
    nodes: tuple[NumaNode, ...]
    source: str  # "sysfs", or "fallback" where the kernel exposes no NUMA sysfs (one node)


DiskKind = Literal["nvme", "ssd", "hdd", "raid", "virtual", "network", "unknown"]  # raid: an md array
NicKind = Literal["infiniband", "roce", "ethernet", "virtual", "loopback"]
# compute when it is both (see GpuProcess.kinds); holder: holds the GPU's device file, unlisted by NVML
GpuProcessKind = Literal["compute", "graphics", "holder"]
TopoKind = Literal["gpu", "nic"]


class DiskSnapshot(Record, frozen=True):
    name: str
    kind: DiskKind
    read_bytes_per_s: float | None
    write_bytes_per_s: float | None
    read_iops: float | None
    write_iops: float | None
    busy_percent: float | None
    # the md or dm device built on this disk (or on one of its partitions): its bytes are that device's too, so a
    # sum over the disks counts them once, there (/sys/block/NAME/holders)
    held_by: str | None = None


class NicSnapshot(Record, frozen=True):
    """A network port: its link speed and traffic over the last interval, and where it sits.

    One record per Ethernet interface (`/sys/class/net`) and per InfiniBand/RoCE port
    (`/sys/class/infiniband/HCA/ports/N`). A rate is None on the first tick and across a gap (a counter that went
    backwards, a vanished file); the totals are the counters as read, for exporters that publish counters."""

    name: str  # the interface (eth0) or the HCA (mlx5_0); untrusted text: render through safe_text
    kind: NicKind
    speed_gbps: float | None
    rx_bytes_per_s: float | None
    tx_bytes_per_s: float | None
    state: str | None = None  # up | down | ... (operstate, or the IB port's state without its number)
    port: int | None = None  # the HCA port number (IB/RoCE); None for a netdev
    netdev: str | None = None  # the Ethernet interface behind a RoCE/IPoIB port, or None
    numa_node: int | None = None  # from the PCI device's numa_node; None where unknown (virtual, -1)
    nearest_gpu: int | None = None  # the GPU index closest on the PCI tree (topology), None where unknown
    rx_bytes_total: int | None = None  # the counter as read this tick (IB: port_rcv_data x 4)
    tx_bytes_total: int | None = None
    bus_id: str | None = None  # the PCI function (0000:07:00.0) behind it: how the topology places it

    @property
    def physical(self) -> bool:
        return self.kind not in ("virtual", "loopback")


class ProcessInfo(Record, frozen=True):
    pid: int
    ppid: int | None
    user: str | None
    name: str
    cmdline: str | None
    state: str | None
    cpu_percent: float | None
    rss_bytes: int | None
    threads: int | None
    cpu_affinity: tuple[int, ...] | None = None
    owner: Owner | None = None  # its Slurm job, pod or container (probes/owners.py); None: the user's own


class LinkState(Record, frozen=True):
    """A PCIe link: the generation and width it trained to, and the most it can. The one model of a link: NVML's
    live one (a GPU's `pcie`, with its throughput) and sysfs's (`TopoDevice.link`); advice/judge.py judges it."""

    gen: int | None
    width: int | None
    max_gen: int | None
    max_width: int | None

    @property
    def below_max(self) -> bool:
        """Trained below its maximum gen or width (whatever the reason: an idle GPU saves power this way)."""
        slow = self.gen is not None and self.max_gen is not None and self.gen < self.max_gen
        return slow or (self.width is not None and self.max_width is not None and self.width < self.max_width)


class PcieLink(LinkState, frozen=True):
    """A GPU's link as NVML reports it, with the bytes it moves."""

    tx_bytes_per_s: float | None
    rx_bytes_per_s: float | None


class EccCounts(Record, frozen=True):
    volatile_corrected: int | None
    volatile_uncorrected: int | None
    aggregate_corrected: int | None
    aggregate_uncorrected: int | None


class GpmMetrics(Record, frozen=True):
    """Hopper-class activity from GPM: how busy the chip really is, beyond "a kernel was running"."""

    sm_activity_percent: float | None
    sm_occupancy_percent: float | None
    tensor_activity_percent: float | None
    dram_bw_util_percent: float | None
    # Further GPM ratios that dcgm-exporter publishes (DCGM_FI_PROF_GR_ENGINE_ACTIVE, _PIPE_FP64/32/16_ACTIVE);
    # None until the probe reads them.
    graphics_activity_percent: float | None = None
    fp64_activity_percent: float | None = None
    fp32_activity_percent: float | None = None
    fp16_activity_percent: float | None = None


class RowRemap(Record, frozen=True):
    """The row remapper of an HBM GPU (A100, Hopper and newer; NVML's nvmlDeviceGetRemappedRows): rows of its
    memory moved to spare rows after correctable and after uncorrectable errors (kept by the card across reboots), a
    remap recorded but applied only at the next GPU reset (`pending`), and a remap that failed for want of a spare
    row (`failed`: the card needs a reset, and an RMA if it fails again)."""

    correctable_rows: int
    uncorrectable_rows: int
    pending: bool
    failed: bool


class NvlinkErrors(Record, frozen=True):
    """NVLink error counters of one GPU, each summed over its links (nvmlDeviceGetNvLinkErrorCounter per link,
    since the driver loaded): flow-control and data CRC errors, replays (a packet sent again) and recoveries (a
    link retrained). None: the driver does not count that one on this card."""

    crc_flit: int | None
    crc_data: int | None
    replay: int | None
    recovery: int | None


class MigInstance(Record, frozen=True):
    index: int
    uuid: str | None
    name: str | None
    memory_total_bytes: int | None
    memory_used_bytes: int | None


class GpuProcess(Record, frozen=True):
    pid: int
    kind: GpuProcessKind
    used_memory_bytes: int | None
    sm_percent: float | None = None
    mem_percent: float | None = None
    # Joined from the host by pid; `visible` is False when NVML's pid is not one this pid namespace sees.
    visible: bool = True
    user: str | None = None
    command: str | None = None
    cpu_percent: float | None = None
    rss_bytes: int | None = None
    kinds: tuple[str, ...] = ()  # the NVML lists it is in: ("compute", "graphics") for a C+G process, once
    owner: Owner | None = None  # its Slurm job, pod or container, joined by pid as the user and command are


class GpuSnapshot(Record, frozen=True):
    index: int
    name: str | None
    uuid: str | None
    pci_bus_id: str | None
    lost: bool = False
    memory_total_bytes: int | None = None
    memory_used_bytes: int | None = None
    memory_free_bytes: int | None = None
    memory_reserved_bytes: int | None = None
    util_percent: float | None = None
    memory_util_percent: float | None = None
    temperature_c: float | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    sm_clock_mhz: float | None = None
    sm_clock_max_mhz: float | None = None
    mem_clock_mhz: float | None = None
    mem_clock_max_mhz: float | None = None
    fan_percent: float | None = None
    pstate: int | None = None
    throttle_reasons: tuple[str, ...] = ()
    pcie: PcieLink | None = None
    nvlink_tx_bytes_per_s: float | None = None
    nvlink_rx_bytes_per_s: float | None = None
    ecc: EccCounts | None = None
    ecc_enabled: bool | None = None  # the card's current ECC mode; None where it has no ECC
    compute_capability: tuple[int, int] | None = None
    mig_enabled: bool | None = None
    mig: tuple[MigInstance, ...] = ()
    gpm: GpmMetrics | None = None
    gpm_status: str | None = None
    processes: tuple[GpuProcess, ...] = ()
    process_pids_status: str | None = None  # why per-process data is partial, e.g. container pid namespace
    # Counters dcgm-exporter publishes (DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, _XID_ERRORS, _PCIE_REPLAY_COUNTER);
    # None until the probe reads them.
    energy_mj: int | None = None  # energy since the driver loaded, millijoules
    xid_last: int | None = None  # the last XID error reported (0: none since the driver loaded)
    pcie_replays: int | None = None  # PCIe replays since the driver loaded
    # GPU faults dcgm-exporter publishes (DCGM_FI_DEV_*_REMAPPED_ROWS, _ROW_REMAP_*, _NVLINK_*_ERROR_COUNT_TOTAL,
    # _POWER_VIOLATION, _THERMAL_VIOLATION), read on the slow tier; None where the card or driver does not answer.
    row_remap: RowRemap | None = None
    nvlink_errors: NvlinkErrors | None = None  # None without NVLink
    power_violation_ns: int | None = None  # time clocks were held below application clocks by the power limit
    thermal_violation_ns: int | None = None  # ...by heat (both cumulative since the driver loaded)


class GpuSystem(Record, frozen=True):
    """Facts about the NVIDIA stack as a whole, and why no GPU is shown when none is."""

    available: bool
    message: str | None = None
    driver_version: str | None = None
    cuda_driver_version: str | None = None
    source: str = "nvml"  # nvml | demo:<profile> | none


class TopoDevice(Record, frozen=True):
    """A GPU or NIC placed in the machine: its PCI address, NUMA node, local CPUs and PCIe link from sysfs."""

    name: str
    kind: TopoKind
    bus_id: str
    numa_node: int | None
    local_cpus: tuple[int, ...] | None
    link_gen: int | None
    link_width: int | None
    max_link_gen: int | None
    max_link_width: int | None
    nvlinks: int | None = None  # active NVLinks (GPUs)
    network_speed: str | None = None  # NICs: "200 Gb/sec (4X HDR)", "25 Gb/s"

    @property
    def link(self) -> LinkState:
        """Its PCIe link as a LinkState (the four fields stay flat: they are keys of the snapshot schema)."""
        return LinkState(self.link_gen, self.link_width, self.max_link_gen, self.max_link_width)


class Topology(Record, frozen=True):
    """`gpu_links[i][j]` is the `nvidia-smi topo -m` connection type between GPU i and GPU j; `links` covers
    every device in `devices` order (GPUs first, then NICs)."""

    devices: tuple[TopoDevice, ...]
    links: tuple[tuple[str, ...], ...]
    gpu_links: tuple[tuple[str, ...], ...]
    source: str  # where the PCI tree was read: "sysfs" or "demo:<profile>"
    numa: NumaSnapshot | None = None  # the NUMA layout of the machine this topology describes
    disagreements: tuple[str, ...] = ()  # pairs where sysfs and NVML's common ancestor differ

    def gpu_numa_nodes(self) -> dict[int, int]:
        """GPU index → the NUMA node it is attached to, for the GPUs whose node is known."""
        return {int(d.name[3:]): d.numa_node for d in self.devices
                if d.kind == "gpu" and d.numa_node is not None and d.name[3:].isdigit()}


class ProbeError(Record, frozen=True):
    probe: str
    message: str


class Snapshot(Record, frozen=True):
    time: float
    interval_s: float | None
    host: HostInfo | None
    cpu: CpuSnapshot | None
    memory: MemorySnapshot | None
    numa: NumaSnapshot | None
    disks: tuple[DiskSnapshot, ...] = ()
    processes: tuple[ProcessInfo, ...] = ()
    gpus: tuple[GpuSnapshot, ...] = ()
    gpu_system: GpuSystem | None = None
    topology: Topology | None = None
    workload: hwtop.model.workload.WorkloadState | None = None
    errors: tuple[ProbeError, ...] = ()
    job: hwtop.model.job.JobSnapshot | None = None
    nics: tuple[NicSnapshot, ...] = ()  # network ports, where a reader provides them (the demo host does)
    schema: str = SCHEMA

    def to_dict(self) -> dict[str, Any]:
        return msgspec.to_builtins(self)

    def to_json(self, indent: int | None = None) -> str:
        import json  # `snapshot --json` alone needs it: not imported on the monitor's start path

        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

