"""`hwtop topo`: the connection matrix with CPU and NUMA affinity columns (as `nvidia-smi topo -m` prints it),
the NUMA table (as `numactl --hardware` prints it), and link health."""

from __future__ import annotations

import json

from probes.model import NumaSnapshot, Topology
from probes.numa import NumaProbe
from probes.sysfs import format_cpulist
from probes.topology import read_topology

LEGEND = """Legend:
  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes
  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)
  PIX  = Connection traversing at most a single PCIe bridge
  NV#  = Connection traversing a bonded set of # NVLinks"""


def gather(demo: str | None) -> tuple[Topology, NumaSnapshot]:
    """The topology and NUMA layout of this machine, or of a demo profile's synthetic sysfs tree."""
    from probes.gpu import NvmlProbe

    if demo is None:
        probe = NvmlProbe()
        try:
            return read_topology("/", *probe.topology_inputs()), NumaProbe("/").read()
        finally:
            probe.close()
    from probes.demo_topology import read_demo_topology
    from probes.fakenvml import FakeNvml

    probe = NvmlProbe(FakeNvml(demo), source=f"demo:{demo}")
    try:
        return read_demo_topology(demo, probe)
    finally:
        probe.close()


def render(topology: Topology, numa: NumaSnapshot) -> str:
    names = [d.name for d in topology.devices]
    width = max([6, *(len(n) + 1 for n in names)])
    out = []
    if names:
        out.append(" " * width + "".join(f"{n:>{width}}" for n in names) + "    CPU Affinity      NUMA Affinity")
        for device, row in zip(topology.devices, topology.links, strict=True):
            cpus = format_cpulist(device.local_cpus) if device.local_cpus else "N/A"
            node = "N/A" if device.numa_node is None else str(device.numa_node)
            out.append(f"{device.name:<{width}}" + "".join(f"{c:>{width}}" for c in row) + f"    {cpus:<17} {node}")
        out += ["", LEGEND, ""]
    else:
        out += ["No GPU or NIC to place (no NVML, no InfiniBand device).", ""]
    out.append(f"available: {len(numa.nodes)} nodes ({format_cpulist([n.index for n in numa.nodes])})"
               + ("  [no NUMA sysfs: one node]" if numa.source == "fallback" else ""))
    for node in numa.nodes:
        out.append(f"node {node.index} cpus: {' '.join(map(str, node.cpus))}")
        if node.memory_total_bytes is not None:
            out.append(f"node {node.index} size: {node.memory_total_bytes // 2**20} MB")
        if node.memory_free_bytes is not None:
            out.append(f"node {node.index} free: {node.memory_free_bytes // 2**20} MB")
    out.append("node distances:")
    out.append("node " + "".join(f"{n.index:>4}" for n in numa.nodes))
    for node in numa.nodes:
        out.append(f"{node.index:>4}:" + "".join(f"{d:>4}" for d in node.distances))
    out.append("")
    out.append("link health:")
    below = [d for d in topology.devices if d.link_gen and d.max_link_gen and (
        d.link_gen < d.max_link_gen or (d.link_width or 0) < (d.max_link_width or 0))]
    if not topology.devices:
        out.append("  no PCIe devices to check")
    for d in topology.devices:
        if d.link_gen is None:
            continue
        mark = "below its maximum (fine if the GPU is idle: links drop speed to save power)" if d in below else "ok"
        out.append(f"  {d.name:<8} PCIe gen {d.link_gen} x{d.link_width} of gen {d.max_link_gen} "
                   f"x{d.max_link_width}: {mark}")
    return "\n".join(out)


def topo_command(demo: str | None, as_json: bool) -> int:
    import dataclasses

    topology, numa = gather(demo)
    if as_json:
        print(json.dumps({"topology": dataclasses.asdict(topology), "numa": dataclasses.asdict(numa)}, indent=2))
    else:
        print(render(topology, numa))
    return 0
