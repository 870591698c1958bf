"""Metric families from one snapshot and the active findings. GPU series carry dcgm-exporter's names, units and
labels (gpu, UUID, pci_bus_id, device, modelName, Hostname); the rest is hwtop_*. Nothing here reads the
machine: a scrape renders what the sampler thread last saw."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client.core import GaugeMetricFamily, InfoMetricFamily
from prometheus_client.metrics_core import Metric

from hwtop.model.finding import Finding
from hwtop.model.snapshot import GpuSnapshot, Snapshot

MIB = 1 << 20
GPU_LABELS = ["gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname"]

# name, help (dcgm-exporter's wording and units), value of a GPU
DCGM_GAUGES: tuple[tuple[str, str, Any], ...] = (
    ("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", lambda g: g.util_percent),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "Memory utilization (in %).", lambda g: g.memory_util_percent),
    ("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).",
     lambda g: None if g.memory_used_bytes is None else g.memory_used_bytes / MIB),
    ("DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).",
     lambda g: None if g.memory_free_bytes is None else g.memory_free_bytes / MIB),
    ("DCGM_FI_DEV_FB_TOTAL", "Framebuffer memory total (in MiB).",
     lambda g: None if g.memory_total_bytes is None else g.memory_total_bytes / MIB),
    ("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", lambda g: g.temperature_c),
    ("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", lambda g: g.power_w),
    ("DCGM_FI_DEV_POWER_MGMT_LIMIT", "Power management limit (in W).", lambda g: g.power_limit_w),
    ("DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz).", lambda g: g.sm_clock_mhz),
    ("DCGM_FI_DEV_MEM_CLOCK", "Memory clock frequency (in MHz).", lambda g: g.mem_clock_mhz),
    ("DCGM_FI_DEV_FAN_SPEED", "Fan speed (in %).", lambda g: g.fan_percent),
    ("DCGM_FI_DEV_PCIE_TX_THROUGHPUT", "PCIe Tx throughput (in KB/s).",
     lambda g: None if g.pcie is None or g.pcie.tx_bytes_per_s is None else g.pcie.tx_bytes_per_s / 1024),
    ("DCGM_FI_DEV_PCIE_RX_THROUGHPUT", "PCIe Rx throughput (in KB/s).",
     lambda g: None if g.pcie is None or g.pcie.rx_bytes_per_s is None else g.pcie.rx_bytes_per_s / 1024),
    ("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "Total number of single-bit volatile ECC errors.",
     lambda g: None if g.ecc is None else g.ecc.volatile_corrected),
    ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "Total number of double-bit volatile ECC errors.",
     lambda g: None if g.ecc is None else g.ecc.volatile_uncorrected),
)


def gpu_labels(gpu: GpuSnapshot, hostname: str) -> list[str]:
    return [str(gpu.index), gpu.uuid or "", gpu.pci_bus_id or "", f"nvidia{gpu.index}", gpu.name or "", hostname]


def families(snapshot: Snapshot | None, findings: tuple[Finding, ...], version: str) -> Iterator[Metric]:
    info = InfoMetricFamily("hwtop", "hwtop build and source", labels=["Hostname"])
    if snapshot is None:
        yield info
        return
    host = snapshot.host.hostname if snapshot.host else ""
    source = snapshot.gpu_system.source if snapshot.gpu_system else "none"
    info.add_metric([host], {"version": version, "source": source})
    yield info
    stamp = GaugeMetricFamily("hwtop_snapshot_timestamp_seconds", "Unix time of the snapshot these values are from",
                              labels=["Hostname"])
    stamp.add_metric([host], snapshot.time)
    yield stamp
    live = [g for g in snapshot.gpus if not g.lost]
    for name, text, read in DCGM_GAUGES:
        family = GaugeMetricFamily(name, text, labels=GPU_LABELS)
        for gpu in live:
            value = read(gpu)
            if value is not None:  # a field the card does not report is absent, as with dcgm-exporter
                family.add_metric(gpu_labels(gpu, host), float(value))
        yield family
    lost = GaugeMetricFamily("hwtop_gpu_lost", "1 while the GPU stops answering NVML", labels=GPU_LABELS)
    nvlink = GaugeMetricFamily("hwtop_gpu_nvlink_bytes_per_second", "NVLink throughput, all links together",
                               labels=[*GPU_LABELS, "direction"])
    for gpu in snapshot.gpus:
        lost.add_metric(gpu_labels(gpu, host), 1.0 if gpu.lost else 0.0)
        for direction, value in (("tx", gpu.nvlink_tx_bytes_per_s), ("rx", gpu.nvlink_rx_bytes_per_s)):
            if value is not None:
                nvlink.add_metric([*gpu_labels(gpu, host), direction], value)
    yield lost
    yield nvlink
    yield from _host_families(snapshot, host)
    yield from _workload_families(snapshot, host)
    active = GaugeMetricFamily("hwtop_advice_finding", "1 for each active advice finding",
                               labels=["id", "severity", "scope", "Hostname"])
    for finding in findings:
        active.add_metric([finding.id, finding.severity, finding.scope, host], 1.0)
    yield active


def _host_families(snapshot: Snapshot, host: str) -> Iterator[Metric]:
    cpu = snapshot.cpu
    busy = GaugeMetricFamily("hwtop_cpu_core_busy_percent", "Busy share of each logical core",
                             labels=["core", "numa_node", "Hostname"])
    total = GaugeMetricFamily("hwtop_cpu_busy_percent", "Busy share of all cores", labels=["Hostname"])
    if cpu is not None:
        for core in cpu.cores:
            if core.percent is not None:
                busy.add_metric([str(core.index), str(core.numa_node), host], core.percent)
        if cpu.percent is not None:
            total.add_metric([host], cpu.percent)
    yield busy
    yield total
    memory = snapshot.memory
    for name, text, value in (
            ("hwtop_memory_total_bytes", "Host RAM", memory.total_bytes if memory else None),
            ("hwtop_memory_available_bytes", "Host RAM available", memory.available_bytes if memory else None),
            ("hwtop_swap_used_bytes", "Swap in use", memory.swap_used_bytes if memory else None)):
        family = GaugeMetricFamily(name, text, labels=["Hostname"])
        if value is not None:
            family.add_metric([host], value)
        yield family
    node_total = GaugeMetricFamily("hwtop_numa_memory_total_bytes", "Memory of each NUMA node",
                                   labels=["node", "Hostname"])
    node_free = GaugeMetricFamily("hwtop_numa_memory_free_bytes", "Free memory of each NUMA node",
                                  labels=["node", "Hostname"])
    for node in snapshot.numa.nodes if snapshot.numa else ():
        if node.memory_total_bytes is not None:
            node_total.add_metric([str(node.index), host], node.memory_total_bytes)
        if node.memory_free_bytes is not None:
            node_free.add_metric([str(node.index), host], node.memory_free_bytes)
    yield node_total
    yield node_free
    for name, text, attr in (("hwtop_disk_read_bytes_per_second", "Disk reads", "read_bytes_per_s"),
                             ("hwtop_disk_write_bytes_per_second", "Disk writes", "write_bytes_per_s"),
                             ("hwtop_disk_busy_percent", "Share of time with I/O in flight", "busy_percent")):
        family = GaugeMetricFamily(name, text, labels=["device", "kind", "Hostname"])
        for disk in snapshot.disks:
            value = getattr(disk, attr)
            if value is not None:
                family.add_metric([disk.name, disk.kind, host], value)
        yield family


def _workload_families(snapshot: Snapshot, host: str) -> Iterator[Metric]:
    workload = snapshot.workload
    labels = ["rank", "scenario", "Hostname"]
    for name, text, attr in (("hwtop_workload_samples_per_second", "Training throughput of each rank", "samples_per_s"),
                             ("hwtop_workload_data_wait_ratio", "Share of each step spent waiting for data",
                              "data_wait_fraction"),
                             ("hwtop_workload_step_seconds", "Duration of the last step", "step_time_s")):
        family = GaugeMetricFamily(name, text, labels=labels)
        for rank in workload.ranks if workload else ():
            value = getattr(rank, attr)
            if value is not None:
                family.add_metric([str(rank.rank), workload.scenario, host], value)  # type: ignore[union-attr]
        yield family
