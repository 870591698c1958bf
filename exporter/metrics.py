"""Metric families from one snapshot and the active findings.

GPU series carry dcgm-exporter's names, types, units and labels (gpu, UUID, pci_bus_id, device, modelName,
Hostname), so NVIDIA's Grafana dashboard and existing alerts read them unchanged: memory in whole MiB, GPM
activity as a ratio 0-1, PCIe in bytes per second, energy a counter in mJ. A field the card does not report has
no sample, as with dcgm-exporter. hwtop's own series are `hwtop_*`. Nothing here reads the machine: a scrape
renders what the ticking thread last saw."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hwtop.exporter.text import Family, Kind
from hwtop.model.finding import Finding
from hwtop.model.owner import POD, SLURM, Owner, distinct
from hwtop.model.snapshot import GpmMetrics, GpuSnapshot, NicSnapshot, Snapshot

if TYPE_CHECKING:  # a job's model loads with a job (as job_metrics does)
    from hwtop.model.verdict import Verdicts

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
    # The row remapper, NVLink errors and violation times (probes/nvml/faults.py): dcgm-exporter's help texts
    # (etc/default-counters.csv), DCGM's for ROW_REMAP_PENDING (dcgm_fields.h, field 396), which the CSV leaves out.
    # Violation time is in ns: NVML's unit, which DCGM passes on (dcgm-exporter's CSV said "us" until its #589).
    GpuField("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for correctable errors",
             lambda g: None if g.row_remap is None else g.row_remap.correctable_rows),
    GpuField("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for uncorrectable errors",
             lambda g: None if g.row_remap is None else g.row_remap.uncorrectable_rows),
    GpuField("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed",
             lambda g: None if g.row_remap is None else int(g.row_remap.failed)),
    GpuField("DCGM_FI_DEV_ROW_REMAP_PENDING", "gauge", "Whether remapping of rows is pending",
             lambda g: None if g.row_remap is None else int(g.row_remap.pending)),
    GpuField("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "counter",
             "Total number of NVLink flow-control CRC errors.",
             lambda g: None if g.nvlink_errors is None else g.nvlink_errors.crc_flit),
    GpuField("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink data CRC errors.",
             lambda g: None if g.nvlink_errors is None else g.nvlink_errors.crc_data),
    GpuField("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink retries.",
             lambda g: None if g.nvlink_errors is None else g.nvlink_errors.replay),
    GpuField("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink recovery errors.",
             lambda g: None if g.nvlink_errors is None else g.nvlink_errors.recovery),
    GpuField("DCGM_FI_DEV_POWER_VIOLATION", "counter", "Throttling duration due to power constraints (in ns).",
             lambda g: g.power_violation_ns),
    GpuField("DCGM_FI_DEV_THERMAL_VIOLATION", "counter", "Throttling duration due to thermal constraints (in ns).",
             lambda g: g.thermal_violation_ns),
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


# Whose a GPU is, as dcgm-exporter labels it (internal/pkg/transformation/const.go: hpc_job from its HPC job mapping
# directory, pod/namespace/container from the kubelet's pod-resources API). hwtop reads the owners of the GPU's
# processes (probes/owners.py) instead; a plain Docker/Podman container is `container` alone. A GPU two owners
# share gets a series per owner, each with the GPU's whole value, as dcgm-exporter's HPC mapper copies a metric
# for each job a GPU's mapping file lists (hpc.go) and its Kubernetes mapper for each pod sharing a GPU
# (kubernetes.go, shared GPUs): sum a figure by gpu, not by owner. The labels appear only where some GPU of this
# box has such an owner, so a box without Slurm or Kubernetes keeps dcgm-exporter's plain label set.
OWNER_LABELS = ("hpc_job", "pod", "namespace", "container")


def owner_label_names(gpus: tuple[GpuSnapshot, ...]) -> tuple[str, ...]:
    """The owner labels this box's GPU series carry: hpc_job where a Slurm job holds a GPU, pod, namespace and
    container where a pod does, container where a container does."""
    kinds = {p.owner.kind for g in gpus for p in g.processes if p.owner is not None}
    wanted = set()
    if SLURM in kinds:
        wanted.add("hpc_job")
    if POD in kinds:
        wanted.update(("pod", "namespace", "container"))
    if kinds - {SLURM, POD}:
        wanted.add("container")
    return tuple(name for name in OWNER_LABELS if name in wanted)


def _owner_values(owner: Owner | None) -> dict[str, str]:
    if owner is None:
        return {}
    if owner.kind == SLURM:
        return {"hpc_job": owner.job_id or ""}
    if owner.kind == POD:  # the pod's name where its environment said it, else its uid (never two pods as one)
        return {"pod": owner.pod or owner.pod_uid or "", "namespace": owner.namespace or "",
                "container": owner.container or ""}
    return {"container": owner.container or ""}


def gpu_series_labels(gpu: GpuSnapshot, hostname: str, names: tuple[str, ...]) -> list[tuple[str, ...]]:
    """A GPU's label values: one set, or one per owner where `names` carries owner labels (empty values, which
    Prometheus reads as no label, for a GPU nobody owns)."""
    base = gpu_labels(gpu, hostname)
    if not names:
        return [base]
    owners: list[Owner | None] = list(distinct([p.owner for p in gpu.processes])) or [None]
    return [(*base, *(_owner_values(owner).get(name, "") for name in names)) for owner in owners]


def families(snapshot: Snapshot | None, findings: tuple[Finding, ...], version: str,
             hostname: str | None = None, job_name: str | None = None,
             verdicts: Verdicts | None = None) -> Iterator[Family]:
    """`hostname` overrides the snapshot's (dcgm-exporter takes $NODE_NAME the same way); `job_name` the focused
    job's label (default: the job's own); `verdicts` the frame's (Frame.verdicts: the ranks' states the findings
    were judged from), so hwtop_job_rank_state says what the rules say."""
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
    names = owner_label_names(snapshot.gpus)
    labels = (*GPU_LABELS, *names)
    series = {gpu.index: gpu_series_labels(gpu, host, names) for gpu in snapshot.gpus}
    for spec in DCGM_FIELDS:
        family = Family(spec.name, spec.help, labels, spec.kind)
        for gpu in live:
            value = spec.read(gpu)
            if value is not None:
                for values in series[gpu.index]:
                    family.add(values, value)
        yield family
    lost = Family("hwtop_gpu_lost", "1 while the GPU stops answering NVML", labels)
    nvlink = Family("hwtop_gpu_nvlink_bytes_per_second", "NVLink throughput, all links together",
                    (*labels, "direction"))
    for gpu in snapshot.gpus:
        for values in series[gpu.index]:
            lost.add(values, 1 if gpu.lost else 0)
            for direction, value in (("tx", gpu.nvlink_tx_bytes_per_s), ("rx", gpu.nvlink_rx_bytes_per_s)):
                if value is not None:
                    nvlink.add((*values, direction), value)
    yield lost
    yield nvlink
    yield from _host_families(snapshot, host)
    yield from network_families(snapshot.nics, host)
    yield from _workload_families(snapshot, host)
    if snapshot.job is not None:
        from hwtop.exporter.job_metrics import job_families  # only an exporter watching a job loads it

        yield from job_families(snapshot.job, job_name or snapshot.job.label, host, verdicts)
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
        key = (str(rank.rank), workload.kind if workload else "", host)
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


def port_label(nic: NicSnapshot) -> str:
    return "" if nic.port is None else str(nic.port)


def network_families(nics: tuple[NicSnapshot, ...], host: str) -> Iterator[Family]:
    """Interfaces and InfiniBand/RoCE ports under node-exporter's names (its netclass/netdev and infiniband
    collectors), so node-exporter dashboards read them unchanged; then hwtop's own rates, which the fleet reads."""
    yield from _netdev_families([n for n in nics if n.port is None], host)
    yield from _infiniband_families([n for n in nics if n.port is not None], host)
    yield from _port_rate_families(nics, host)


def _netdev_families(netdevs: list[NicSnapshot], host: str) -> Iterator[Family]:
    """node-exporter's netdev byte counters and netclass speed and state, by interface."""
    for name, text, read in (
            ("node_network_receive_bytes_total", "Network device statistic receive_bytes.", lambda n: n.rx_bytes_total),
            ("node_network_transmit_bytes_total", "Network device statistic transmit_bytes.",
             lambda n: n.tx_bytes_total)):
        family = Family(name, text, ("device", "Hostname"), "counter")
        for nic in netdevs:
            value = read(nic)
            if value is not None:
                family.add((nic.name, host), value)
        yield family
    speed = Family("node_network_speed_bytes", "Network device property: speed_bytes", ("device", "Hostname"))
    up = Family("node_network_up", "Value is 1 if operstate is 'up', 0 otherwise.", ("device", "Hostname"))
    for nic in netdevs:
        if nic.speed_gbps is not None:
            speed.add((nic.name, host), nic.speed_gbps * 1e9 / 8)
        if nic.state is not None:
            up.add((nic.name, host), 1 if nic.state == "up" else 0)
    yield speed
    yield up


def _infiniband_families(ports: list[NicSnapshot], host: str) -> Iterator[Family]:
    """node-exporter's infiniband collector: data octets each way and the rate, by device and port."""
    for name, text, read in (
            ("node_infiniband_port_data_received_bytes_total", "Number of data octets received on all links",
             lambda n: n.rx_bytes_total),
            ("node_infiniband_port_data_transmitted_bytes_total", "Number of data octets transmitted on all links",
             lambda n: n.tx_bytes_total)):
        family = Family(name, text, ("device", "port", "Hostname"), "counter")
        for nic in ports:
            value = read(nic)
            if value is not None:
                family.add((nic.name, port_label(nic), host), value)
        yield family
    rate = Family("node_infiniband_rate_bytes_per_second", "Maximum signal transfer rate",
                  ("device", "port", "Hostname"))
    for nic in ports:
        if nic.speed_gbps is not None:
            rate.add((nic.name, port_label(nic), host), nic.speed_gbps * 1e9 / 8)
    yield rate


def _port_rate_families(nics: tuple[NicSnapshot, ...], host: str) -> Iterator[Family]:
    """hwtop's own: each physical port's bytes per second each way, and its busier direction's share of the line."""
    labels = ("device", "port", "kind", "Hostname")
    moving = Family("hwtop_network_port_bytes_per_second", "Traffic of each physical network port over the last "
                    "interval", (*labels, "direction"))
    share = Family("hwtop_network_port_line_ratio", "The busier direction of each physical port as a share of its "
                   "line rate (0-1)", labels)
    for nic in nics:
        if not nic.physical:
            continue
        key = (nic.name, port_label(nic), nic.kind, host)
        for direction, value in (("rx", nic.rx_bytes_per_s), ("tx", nic.tx_bytes_per_s)):
            if value is not None:
                moving.add((*key, direction), value)
        if nic.speed_gbps and nic.rx_bytes_per_s is not None and nic.tx_bytes_per_s is not None:
            share.add(key, max(nic.rx_bytes_per_s, nic.tx_bytes_per_s) * 8 / (nic.speed_gbps * 1e9))
    yield moving
    yield share
