"""Metric families from one snapshot and the active findings.

GPU series carry dcgm-exporter's names, types, units and labels (gpu, UUID, pci_bus_id, device, modelName,
Hostname), so NVIDIA's Grafana dashboard and existing alerts read them unchanged: memory in whole MiB, GPM
activity as a ratio 0-1, PCIe in bytes per second, energy a counter in mJ. A field the card does not report has
no sample, as with dcgm-exporter. hwtop's own series are `hwtop_*`. Nothing here reads the machine: a scrape
renders what the ticking thread last saw."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from hwtop.exporter.text import Family, Kind
from hwtop.model.finding import Finding
from hwtop.model.snapshot import GpmMetrics, GpuSnapshot, Snapshot

MIB = 1 << 20
GPU_LABELS = ("gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname")


@dataclass(frozen=True, slots=True)
class GpuField:
    name: str
    kind: Kind
    help: str  # dcgm-exporter's wording and unit
    read: Callable[[GpuSnapshot], float | None]


def _mib(value: int | None) -> float | None:
    return None if value is None else float(value // MIB)  # whole MiB, as DCGM reports framebuffer sizes


def _gpm(pick: Callable[[GpmMetrics], float | None]) -> Callable[[GpuSnapshot], float | None]:
    """A GPM percentage as DCGM's ratio 0-1."""
    def read(gpu: GpuSnapshot) -> float | None:
        value = None if gpu.gpm is None else pick(gpu.gpm)
        return None if value is None else value / 100.0
    return read


DCGM_FIELDS: tuple[GpuField, ...] = (
    GpuField("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", lambda g: g.sm_clock_mhz),
    GpuField("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).", lambda g: g.mem_clock_mhz),
    GpuField("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", lambda g: g.temperature_c),
    GpuField("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", lambda g: g.power_w),
    GpuField("DCGM_FI_DEV_ENFORCED_POWER_LIMIT", "gauge",
             "Effective power limit that the driver enforces after taking into account all limiters (in W).",
             lambda g: g.power_limit_w),
    GpuField("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ).",
             lambda g: g.energy_mj),
    GpuField("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries.", lambda g: g.pcie_replays),
    GpuField("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", lambda g: g.util_percent),
    GpuField("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).", lambda g: g.memory_util_percent),
    GpuField("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.", lambda g: g.xid_last),
    GpuField("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).",
             lambda g: _mib(g.memory_free_bytes)),
    GpuField("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).",
             lambda g: _mib(g.memory_used_bytes)),
    GpuField("DCGM_FI_DEV_FB_RESERVED", "gauge", "Framebuffer memory reserved (in MiB).",
             lambda g: _mib(g.memory_reserved_bytes)),
    GpuField("DCGM_FI_DEV_FB_TOTAL", "gauge", "Framebuffer memory total (in MiB).",
             lambda g: _mib(g.memory_total_bytes)),
    GpuField("DCGM_FI_DEV_FAN_SPEED", "gauge", "Fan speed (in %).", lambda g: g.fan_percent),
    GpuField("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter", "Total number of single-bit volatile ECC errors.",
             lambda g: None if g.ecc is None else g.ecc.volatile_corrected),
    GpuField("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "Total number of double-bit volatile ECC errors.",
             lambda g: None if g.ecc is None else g.ecc.volatile_uncorrected),
    GpuField("DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", "counter", "Total number of single-bit persistent ECC errors.",
             lambda g: None if g.ecc is None else g.ecc.aggregate_corrected),
    GpuField("DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", "counter", "Total number of double-bit persistent ECC errors.",
             lambda g: None if g.ecc is None else g.ecc.aggregate_uncorrected),
    GpuField("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active.",
             _gpm(lambda m: m.graphics_activity_percent)),
    GpuField("DCGM_FI_PROF_SM_ACTIVE", "gauge", "The ratio of cycles an SM has at least 1 warp assigned.",
             _gpm(lambda m: m.sm_activity_percent)),
    GpuField("DCGM_FI_PROF_SM_OCCUPANCY", "gauge", "The ratio of number of warps resident on an SM.",
             _gpm(lambda m: m.sm_occupancy_percent)),
    GpuField("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Ratio of cycles the tensor (HMMA) pipe is active.",
             _gpm(lambda m: m.tensor_activity_percent)),
    GpuField("DCGM_FI_PROF_DRAM_ACTIVE", "gauge",
             "Ratio of cycles the device memory interface is active sending or receiving data.",
             _gpm(lambda m: m.dram_bw_util_percent)),
    GpuField("DCGM_FI_PROF_PIPE_FP64_ACTIVE", "gauge", "Ratio of cycles the fp64 pipes are active.",
             _gpm(lambda m: m.fp64_activity_percent)),
    GpuField("DCGM_FI_PROF_PIPE_FP32_ACTIVE", "gauge", "Ratio of cycles the fp32 pipes are active.",
             _gpm(lambda m: m.fp32_activity_percent)),
    GpuField("DCGM_FI_PROF_PIPE_FP16_ACTIVE", "gauge", "Ratio of cycles the fp16 pipes are active.",
             _gpm(lambda m: m.fp16_activity_percent)),
    GpuField("DCGM_FI_PROF_PCIE_TX_BYTES", "gauge",
             "The rate of data transmitted over the PCIe bus - including both protocol headers and data payloads "
             "- in bytes per second.", lambda g: None if g.pcie is None else g.pcie.tx_bytes_per_s),
    GpuField("DCGM_FI_PROF_PCIE_RX_BYTES", "gauge",
             "The rate of data received over the PCIe bus - including both protocol headers and data payloads "
             "- in bytes per second.", lambda g: None if g.pcie is None else g.pcie.rx_bytes_per_s),
)


def gpu_labels(gpu: GpuSnapshot, hostname: str) -> tuple[str, ...]:
    return (str(gpu.index), gpu.uuid or "", gpu.pci_bus_id or "", f"nvidia{gpu.index}", gpu.name or "", hostname)


def families(snapshot: Snapshot | None, findings: tuple[Finding, ...], version: str,
             hostname: str | None = None, job_name: str | None = None) -> Iterator[Family]:
    """`hostname` overrides the snapshot's (dcgm-exporter takes $NODE_NAME the same way); `job_name` the focused
    job's label (default: the job's own)."""
    info = Family("hwtop_info", "hwtop build and source; always 1", ("Hostname", "version", "source"))
    if snapshot is None:
        yield info
        return
    host = hostname or (snapshot.host.hostname if snapshot.host else "")
    info.add((host, version, snapshot.gpu_system.source if snapshot.gpu_system else "none"), 1)
    yield info
    stamp = Family("hwtop_snapshot_timestamp_seconds", "Unix time of the snapshot these values are from",
                   ("Hostname",))
    stamp.add((host,), snapshot.time)
    yield stamp
    live = [g for g in snapshot.gpus if not g.lost]
    for spec in DCGM_FIELDS:
        family = Family(spec.name, spec.help, GPU_LABELS, spec.kind)
        for gpu in live:
            value = spec.read(gpu)
            if value is not None:
                family.add(gpu_labels(gpu, host), value)
        yield family
    lost = Family("hwtop_gpu_lost", "1 while the GPU stops answering NVML", GPU_LABELS)
    nvlink = Family("hwtop_gpu_nvlink_bytes_per_second", "NVLink throughput, all links together",
                    (*GPU_LABELS, "direction"))
    for gpu in snapshot.gpus:
        lost.add(gpu_labels(gpu, host), 1 if gpu.lost else 0)
        for direction, value in (("tx", gpu.nvlink_tx_bytes_per_s), ("rx", gpu.nvlink_rx_bytes_per_s)):
            if value is not None:
                nvlink.add((*gpu_labels(gpu, host), direction), value)
    yield lost
    yield nvlink
    yield from _host_families(snapshot, host)
    yield from _workload_families(snapshot, host)
    if snapshot.job is not None:
        from hwtop.exporter.job_metrics import job_families  # only an exporter watching a job loads it

        yield from job_families(snapshot.job, job_name or snapshot.job.label, host)
    yield finding_family(findings, host)


def finding_family(findings: tuple[Finding, ...], host: str) -> Family:
    """One series per active finding, that is per cause: eight GPUs with one cause are one series whose `scope`
    names them ("GPU0-7", bounded: advice/grouping.py), and two causes of one rule (heat on GPU0, a power cap on
    GPU3) are two series, their scopes apart."""
    family = Family("hwtop_finding", "1 for each active advice finding: what limits the job",
                    ("rule", "severity", "scope", "Hostname"))
    seen: set[tuple[str, str]] = set()
    for finding in findings:
        if finding.key not in seen:
            seen.add(finding.key)
            family.add((finding.id, finding.severity, finding.scope, host), 1)
    return family


def _host_families(snapshot: Snapshot, host: str) -> Iterator[Family]:
    cpu = snapshot.cpu
    busy = Family("hwtop_cpu_core_busy_percent", "Busy share of each logical core", ("core", "numa_node", "Hostname"))
    total = Family("hwtop_cpu_busy_percent", "Busy share of all cores", ("Hostname",))
    if cpu is not None:
        for core in cpu.cores:
            if core.percent is not None:
                busy.add((str(core.index), str(core.numa_node), host), core.percent)
        if cpu.percent is not None:
            total.add((host,), cpu.percent)
    yield busy
    yield total
    memory = snapshot.memory
    for name, text, value in (
            ("hwtop_memory_total_bytes", "Host RAM", memory.total_bytes if memory else None),
            ("hwtop_memory_available_bytes", "Host RAM available", memory.available_bytes if memory else None),
            ("hwtop_swap_used_bytes", "Swap in use", memory.swap_used_bytes if memory else None)):
        family = Family(name, text, ("Hostname",))
        if value is not None:
            family.add((host,), value)
        yield family
    node_total = Family("hwtop_numa_memory_total_bytes", "Memory of each NUMA node", ("node", "Hostname"))
    node_free = Family("hwtop_numa_memory_free_bytes", "Free memory of each NUMA node", ("node", "Hostname"))
    for node in snapshot.numa.nodes if snapshot.numa else ():
        if node.memory_total_bytes is not None:
            node_total.add((str(node.index), host), node.memory_total_bytes)
        if node.memory_free_bytes is not None:
            node_free.add((str(node.index), host), node.memory_free_bytes)
    yield node_total
    yield node_free
    for name, text, attr in (("hwtop_disk_read_bytes_per_second", "Disk reads", "read_bytes_per_s"),
                             ("hwtop_disk_write_bytes_per_second", "Disk writes", "write_bytes_per_s"),
                             ("hwtop_disk_busy_percent", "Share of time with I/O in flight", "busy_percent")):
        family = Family(name, text, ("device", "kind", "Hostname"))
        for disk in snapshot.disks:
            value = getattr(disk, attr)
            if value is not None:
                family.add((disk.name, disk.kind, host), value)
        yield family


def _workload_families(snapshot: Snapshot, host: str) -> Iterator[Family]:
    workload = snapshot.workload
    labels = ("rank", "scenario", "Hostname")
    steps = Family("hwtop_workload_steps_per_second", "Training steps per second of each rank (1 / step time)",
                   labels)
    samples = Family("hwtop_workload_samples_per_second", "Training throughput of each rank", labels)
    wait = Family("hwtop_workload_data_wait_ratio", "Share of each step spent waiting for data (0-1)", labels)
    step_time = Family("hwtop_workload_step_seconds", "Duration of the last step", labels)
    for rank in workload.ranks if workload else ():
        key = (str(rank.rank), workload.scenario if workload else "", host)
        if rank.step_time_s:
            steps.add(key, 1.0 / rank.step_time_s)
            step_time.add(key, rank.step_time_s)
        if rank.samples_per_s is not None:
            samples.add(key, rank.samples_per_s)
        if rank.data_wait_fraction is not None:
            wait.add(key, rank.data_wait_fraction)
    yield steps
    yield samples
    yield wait
    yield step_time
