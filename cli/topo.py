"""`hwtop topo`: the connection matrix with CPU and NUMA affinity columns (as `nvidia-smi topo -m` prints it),
the NUMA table (as `numactl --hardware` prints it), link health, and each network port's throughput over a short
sample beside its NUMA node and nearest GPU."""

from __future__ import annotations

import argparse
import json

from hwtop.advice.judge import link_degraded
from hwtop.advice.thresholds import Thresholds
from hwtop.cli.options import Invocation, add_source_options
from hwtop.model.safe_text import printable_lines
from hwtop.model.snapshot import GpuSnapshot, NicSnapshot, NumaSnapshot, Topology
from hwtop.probes.numa import NumaProbe
from hwtop.probes.sysfs import format_cpulist

LEGEND = """Legend:
  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes
  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)
  PIX  = Connection traversing at most a single PCIe bridge
  NV#  = Connection traversing a bonded set of # NVLinks"""


def add_options(topo: argparse.ArgumentParser) -> None:
    topo.description = ("The GPU and NIC connection matrix with CPU and NUMA affinity (as nvidia-smi topo -m), the "
                        "NUMA table (as numactl --hardware), and PCIe link health.")
    topo.add_argument("--json", action="store_true", help="print the same as JSON")
    add_source_options(topo, "unused by topo", sub=True)


def run(call: Invocation) -> int:
    return topo_command(call.args.demo, call.args.json, call.config.thresholds)


def gather(demo: str | None) -> tuple[Topology, NumaSnapshot, tuple[GpuSnapshot, ...]]:
    """The topology, NUMA layout and one GPU reading of this machine, or of a demo profile's synthetic tree."""
    from hwtop.probes.gpu import NvmlProbe

    if demo is None:
        from hwtop.probes.memory import read_memory

        probe = NvmlProbe()
        try:
            topology = probe.machine_topology()
            memory = read_memory("/")  # the nodes' "used" is the memory panel's: total − available
            return topology, NumaProbe("/").read(memory.total_bytes, memory.available_bytes), probe.read()[1]
        finally:
            probe.close()
    from hwtop.demo.machine import demo_sampler

    sampler = demo_sampler(demo)  # one tick of the whole demo machine: the monitor's NUMA figures, not a second set
    try:
        snapshot = sampler.sample()
    finally:
        sampler.close()
    if snapshot.topology is None or snapshot.numa is None:
        raise RuntimeError("; ".join(f"{e.probe}: {e.message}" for e in snapshot.errors) or "no topology")
    return snapshot.topology, snapshot.numa, snapshot.gpus


NETWORK_SAMPLE_S = 0.5  # two readings of the counters this far apart give `hwtop topo` its port rates


def gather_network(demo: str | None, topology: Topology) -> tuple[NicSnapshot, ...]:
    """The ports with their rates: two readings NETWORK_SAMPLE_S apart here; a demo machine's at its 30th second
    (its story's, with PROFILE:STORY)."""
    from hwtop.probes.network import NetworkProbe, place_nics

    if demo is None:
        import time

        probe = NetworkProbe()
        probe.read()
        time.sleep(NETWORK_SAMPLE_S)
        return place_nics(probe.read(), topology)
    from hwtop.demo.host import SimulatedHost
    from hwtop.demo.machine import split_story
    from hwtop.demo.story import get_story
    from hwtop.demo.variants import profile_of

    spec, story = split_story(demo)
    host = SimulatedHost(profile_of(spec), get_story(story), lambda: 30.0)
    return place_nics(host.nics(), topology)


def network_lines(nics: tuple[NicSnapshot, ...]) -> list[str]:
    from hwtop.widgets.network import port_line

    ports = [n for n in nics if n.physical]
    return [f"  {port_line(nic, 200).plain}" for nic in ports] or ["  no network port with a device"]


def link_health(topology: Topology, gpus: tuple[GpuSnapshot, ...], t: Thresholds | None = None) -> list[str]:
    """Each PCIe link below its maximum, flagged only while its GPU is busy (idle GPUs drop speed on purpose), by
    the pcie-degraded rule's judgement and thresholds."""
    t = t or Thresholds()
    lines = []
    by_name = {f"GPU{g.index}": g for g in gpus}
    for device in topology.devices:
        gpu = by_name.get(device.name)
        live = gpu.pcie if gpu is not None else None  # NVML's live link, with the utilisation to judge it by
        link = device.link if live is None else live
        util = gpu.util_percent if live is not None and gpu is not None else None
        gen, width, max_gen, max_width = link.gen, link.width, link.max_gen, link.max_width
        if gen is None or max_gen is None:
            continue
        state = f"{device.name:<8} PCIe gen {gen} x{width} of gen {max_gen} x{max_width}"
        below = gen < max_gen or (width or 0) < (max_width or 0)
        if link_degraded(link, util, t):
            lines.append(f"  {state}: DEGRADED while {util:.0f}% busy — reseat the card, check the slot, BIOS "
                         "PCIe speed and riser")
        elif below and util is not None:
            lines.append(f"  {state}: below its maximum while idle ({util:.0f}%): power saving, not a fault")
        elif below:
            lines.append(f"  {state}: below its maximum (no utilization known to judge it)")
        else:
            lines.append(f"  {state}: ok")
    return lines or ["  no PCIe links to check"]


def render(topology: Topology, numa: NumaSnapshot, gpus: tuple[GpuSnapshot, ...] = (),
           nics: tuple[NicSnapshot, ...] | None = None, thresholds: Thresholds | None = None) -> str:
    out = [*_matrix_lines(topology), *_numa_lines(numa), "", "link health:", *link_health(topology, gpus, thresholds)]
    if nics is not None:
        out += ["", "network:", *network_lines(nics)]
    return printable_lines(out)  # device names and notes come from sysfs and NVML: shown, never sent


def _matrix_lines(topology: Topology) -> list[str]:
    """nvidia-smi topo -m's matrix, with each device's CPU and NUMA affinity and the legend."""
    names = [d.name for d in topology.devices]
    if not names:
        return ["No GPU or NIC to place (no NVML, no NIC with a PCI device).", ""]
    width = max([6, *(len(n) + 1 for n in names)])
    out = [" " * width + "".join(f"{n:>{width}}" for n in names) + "    CPU Affinity      NUMA Affinity"]
    for device, row in zip(topology.devices, topology.links, strict=True):
        cpus = format_cpulist(device.local_cpus) if device.local_cpus else "N/A"
        node = "N/A" if device.numa_node is None else str(device.numa_node)
        out.append(f"{device.name:<{width}}" + "".join(f"{c:>{width}}" for c in row) + f"    {cpus:<17} {node}")
    out += ["", *LEGEND.split("\n"), ""]
    notes = topology.disagreements
    return out + [f"note: sysfs and NVML disagree on {line} (the matrix shows sysfs)" for line in notes]


def _numa_lines(numa: NumaSnapshot) -> list[str]:
    """numactl -H's nodes, sizes and distances."""
    out = [f"available: {len(numa.nodes)} nodes ({format_cpulist([n.index for n in numa.nodes])})"
           + ("  [no NUMA sysfs: one node]" if numa.source == "fallback" else "")]
    for node in numa.nodes:
        out.append(f"node {node.index} cpus: {' '.join(map(str, node.cpus))}")
        # numactl -H's size line (it writes "MB" for MiB: the units rule), then "used" as the monitor means it
        if node.memory_total_bytes is not None:
            out.append(f"node {node.index} size: {node.memory_total_bytes // 2**20} MiB")
        if node.memory_used_bytes is not None:
            out.append(f"node {node.index} used: {node.memory_used_bytes // 2**20} MiB")
    if any(node.memory_used_bytes is not None for node in numa.nodes):
        out.append("(used = size − available: the machine's MemAvailable shared among its nodes, as free and htop "
                   "count used)")
    out.append("node distances:")
    out.append("node " + "".join(f"{n.index:>4}" for n in numa.nodes))
    return out + [f"{node.index:>4}:" + "".join(f"{d:>4}" for d in node.distances) for node in numa.nodes]


def topo_command(demo: str | None, as_json: bool, thresholds: Thresholds | None = None) -> int:
    """`thresholds`: a config file's, so a link is judged as the monitor's pcie-degraded rule judges it."""
    import msgspec

    topology, numa, gpus = gather(demo)
    nics = gather_network(demo, topology)
    if as_json:
        print(json.dumps({"topology": msgspec.to_builtins(topology), "numa": msgspec.to_builtins(numa),
                          "link_health": [line.strip() for line in link_health(topology, gpus, thresholds)],
                          "network": msgspec.to_builtins(nics)}, indent=2))
    else:
        print(render(topology, numa, gpus, nics, thresholds))
    return 0
