"""The facts a box report grades: GPUs with their capabilities and links, CPU, memory, storage. Read once
(the report is not a monitor), from this machine or from a demo profile."""

from __future__ import annotations

import os
from dataclasses import dataclass

from hwtop.probes.gpu_caps import GpuCaps, capabilities
from hwtop.probes.nvml.session import INIT_RETRY_S

# What the monitor's NVML session adds to why it has no GPU; the report reads once and retries nothing.
RETRYING = f"; retrying every {INIT_RETRY_S:g} s"


@dataclass(frozen=True, slots=True)
class GpuFacts:
    index: int
    name: str | None
    memory_bytes: int | None
    compute_capability: tuple[int, int] | None
    caps: GpuCaps | None
    nvlinks: int | None  # active NVLinks
    mig_capable: bool | None
    mig_enabled: bool | None
    pcie_gen: int | None  # the link's maximum (an idle GPU trains its link down on purpose)
    pcie_width: int | None
    bus_id: str | None


@dataclass(frozen=True, slots=True)
class BoxFacts:
    source: str  # "this machine" or "demo:<profile>"
    gpus: tuple[GpuFacts, ...]
    gpu_message: str | None  # why there is no GPU, when there is none
    cpu_model: str | None
    physical_cores: int | None
    logical_cores: int | None
    l3_cache_bytes: int | None
    ram_bytes: int | None
    swap_bytes: int | None
    disks: tuple[tuple[str, str], ...]  # (name, kind)


def _gpu_facts(gpus, topology) -> tuple[GpuFacts, ...]:  # noqa: ANN001 - GpuSnapshot, Topology
    links = {d.name: d.nvlinks for d in topology.devices} if topology is not None else {}
    out = []
    for gpu in gpus:
        pcie = gpu.pcie
        out.append(GpuFacts(
            gpu.index, gpu.name, gpu.memory_total_bytes, gpu.compute_capability,
            capabilities(gpu.name, gpu.compute_capability), links.get(f"GPU{gpu.index}"),
            None if gpu.mig_enabled is None else True, gpu.mig_enabled,
            pcie.max_gen if pcie else None, pcie.max_width if pcie else None, gpu.pci_bus_id))
    return tuple(out)


def once(message: str | None) -> str | None:
    """Why there is no GPU, as a one-shot reading says it: without the monitor's promise to retry."""
    return None if message is None else message.removesuffix(RETRYING)


def gather(demo: str | None = None) -> BoxFacts:
    from hwtop.probes.gpu import NvmlProbe

    if demo is not None:
        from hwtop.demo.nvml import demo_library
        from hwtop.demo.topology import read_demo_topology
        from hwtop.demo.variants import profile_of

        profile = profile_of(demo)
        probe = NvmlProbe(demo_library(demo).pynvml, source=f"demo:{demo}")
        try:
            system, gpus = probe.read(())
            topology, _ = read_demo_topology(demo, probe)
        finally:
            probe.close()
        host = profile.host
        return BoxFacts(f"demo:{demo}", _gpu_facts(gpus, topology), once(system.message),
                        host.cpu_model if host else None, host.physical_cores if host else None,
                        host.logical_cores if host else None, host.l3_cache_bytes if host else None,
                        host.ram_bytes if host else None, host.swap_bytes if host else None,
                        host.disks if host else ())
    import psutil

    from hwtop.probes.cpu import CpuStaticInfo
    from hwtop.probes.disks import disk_kind, whole_disks

    probe = NvmlProbe()
    try:
        system, gpus = probe.read(())
        topology = probe.machine_topology() if gpus else None
    finally:
        probe.close()
    static = CpuStaticInfo(start=False)
    static.load()  # the report waits for these facts; the monitor reads them in the background
    memory, swap = psutil.virtual_memory(), psutil.swap_memory()
    return BoxFacts("this machine", _gpu_facts(gpus, topology), once(system.message), static.model,
                    static.physical_cores, os.cpu_count(), static.l3_cache_bytes, memory.total, swap.total,
                    tuple((name, disk_kind(name)) for name in whole_disks()))
