"""Synthetic sysfs trees laid out as real machines are built, for demo profiles and topology tests.

A layout names, for each PCI endpoint, its host bridge and the bridges on its way down; the builder writes the
device directories (numa_node, local_cpulist, link speed/width) and the /sys/bus/pci/devices links the probe
reads, so the real topology code runs on them.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from typing import Any

from hwtop.model.snapshot import NumaSnapshot, Topology


@dataclass(frozen=True, slots=True)
class Endpoint:
    bus_id: str  # 0000:07:00.0
    path: tuple[str, ...]  # host bridge, bridges..., not including the device
    numa_node: int
    local_cpus: str
    gen: int = 4
    width: int = 16
    max_gen: int = 4
    max_width: int = 16
    kind: str = "gpu"  # gpu | nic
    name: str = ""


_SPEED = {1: "2.5 GT/s PCIe", 2: "5.0 GT/s PCIe", 3: "8.0 GT/s PCIe", 4: "16.0 GT/s PCIe", 5: "32.0 GT/s PCIe",
          6: "64.0 GT/s PCIe"}


def _write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write(text)


def build(root: str, endpoints: list[Endpoint], nodes: list[tuple[str, list[int]]],
          node_bytes: tuple[int, ...] | None = None) -> str:
    """Write the PCI tree and the NUMA nodes (cpulist, distance row, meminfo: `node_bytes` each, else 528 GB)
    under `root`; return root."""
    for ep in endpoints:
        device = os.path.join(root, "sys/devices", *ep.path, ep.bus_id)
        _write(os.path.join(device, "numa_node"), f"{ep.numa_node}\n")
        _write(os.path.join(device, "local_cpulist"), ep.local_cpus + "\n")
        _write(os.path.join(device, "current_link_speed"), _SPEED[ep.gen] + "\n")
        _write(os.path.join(device, "max_link_speed"), _SPEED[ep.max_gen] + "\n")
        _write(os.path.join(device, "current_link_width"), f"{ep.width}\n")
        _write(os.path.join(device, "max_link_width"), f"{ep.max_width}\n")
        link = os.path.join(root, "sys/bus/pci/devices", ep.bus_id)
        os.makedirs(os.path.dirname(link), exist_ok=True)
        if not os.path.lexists(link):
            os.symlink(os.path.relpath(device, os.path.dirname(link)), link)
        if ep.kind == "nic":
            _write(os.path.join(root, "sys/class/infiniband", ep.name, "ports/1/rate"), "200 Gb/sec (4X HDR)\n")
            os.symlink(os.path.relpath(device, os.path.join(root, "sys/class/infiniband", ep.name)),
                       os.path.join(root, "sys/class/infiniband", ep.name, "device"))
    for index, (cpulist, distances) in enumerate(nodes):
        base = os.path.join(root, f"sys/devices/system/node/node{index}")
        _write(os.path.join(base, "cpulist"), cpulist + "\n")
        _write(os.path.join(base, "distance"), " ".join(map(str, distances)) + "\n")
        total_kib = node_bytes[index] // 1024 if node_bytes and index < len(node_bytes) else 528000000
        _write(os.path.join(base, "meminfo"), f"Node {index} MemTotal: {total_kib} kB\nNode {index} MemFree: "
                                              f"{total_kib * 25 // 33} kB\n")
    return root


def dgx_a100() -> tuple[list[Endpoint], list[tuple[str, list[int]]]]:
    """8 GPUs in pairs behind two levels of PCIe switch, two NICs beside each pair, 4 host bridges, 2 sockets."""
    endpoints = []
    bus = ["07", "0f", "47", "4e", "87", "90", "b7", "bd"]
    bridges = ["0000", "0000:20", "0000:80", "0000:a0"]
    for pair in range(4):
        hb = f"pci{bridges[pair][:4]}:{bridges[pair][5:] or '00'}"
        node = 0 if pair < 2 else 1
        cpus = "0-63,128-191" if node == 0 else "64-127,192-255"
        base = int(bus[pair * 2], 16) - 4
        rp, up1, dn_a, up2 = (f"0000:{base - 3:02x}:01.0", f"0000:{base - 2:02x}:00.0", f"0000:{base - 1:02x}:00.0",
                              f"0000:{base:02x}:00.0")
        for k in range(2):
            gpu_bus = f"0000:{bus[pair * 2 + k]}:00.0"
            endpoints.append(Endpoint(gpu_bus, (hb, rp, up1, dn_a, up2, f"0000:{base + 1:02x}:{k:02x}.0"), node, cpus,
                                      name=f"GPU{pair * 2 + k}"))
        for k in range(2):  # two HDR ports beside each pair of GPUs, as on the DGX A100 (mlx5_0..7)
            endpoints.append(Endpoint(f"0000:{base - 1:02x}:{0x10 + k:02x}.0",
                                      (hb, rp, up1, f"0000:{base - 1:02x}:08.0"), node, cpus, kind="nic",
                                      name=f"mlx5_{pair * 2 + k}"))
    nodes = [("0-63,128-191", [10, 32]), ("64-127,192-255", [32, 10])]
    endpoints.sort(key=lambda e: (e.kind != "gpu", e.name))
    return endpoints, nodes


def single_socket(gpu_count: int, gen: int, width: int, nodes: list[tuple[str, list[int]]] | None = None,
                  ) -> tuple[list[Endpoint], list[tuple[str, list[int]]]]:
    """A workstation: each GPU on its own root port of one host bridge, on NUMA node 0 (of `nodes`)."""
    nodes = nodes or [("0-15", [10])]
    endpoints = [Endpoint(f"0000:{0x17 + i * 0x10:02x}:00.0", ("pci0000:00", f"0000:00:{1 + i:02x}.0"), 0,
                          nodes[0][0], gen=gen, width=width, max_gen=gen, max_width=width, name=f"GPU{i}")
                 for i in range(gpu_count)]
    return endpoints, nodes


def cpulist(cpus: tuple[int, ...]) -> str:
    """(0, 1, 2, 5) -> "0-2,5", as sysfs writes a CPU list."""
    ranges: list[list[int]] = []
    for cpu in sorted(cpus):
        if ranges and cpu == ranges[-1][1] + 1:
            ranges[-1][1] = cpu
        else:
            ranges.append([cpu, cpu])
    return ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in ranges)


def host_nodes(profile_name: str) -> list[tuple[str, list[int]]] | None:
    """The NUMA nodes of a profile's simulated host (demo/host.py), so the topology and the CPU panel agree."""
    from hwtop.demo.host import node_cpus
    from hwtop.demo.profiles import HOSTS

    host = HOSTS.get(profile_name)
    if host is None:
        return None
    nodes = node_cpus(host)
    remote = 32 if "AMD" in host.cpu_model else 21
    return [(cpulist(cpus), [10 if m == n else remote for m in range(len(nodes))]) for n, cpus in enumerate(nodes)]


def layout_for(profile_name: str, gpu_count: int, gen: int, width: int) -> tuple[list[Endpoint],
                                                                                  list[tuple[str, list[int]]]]:
    if profile_name == "dgx-a100":
        return dgx_a100()
    nodes = host_nodes(profile_name)
    if profile_name == "ws-2x3090":
        return dual_socket_workstation(gen, width, nodes)
    return single_socket(gpu_count, gen, width, nodes)


def dual_socket_workstation(gen: int, width: int, nodes: list[tuple[str, list[int]]] | None = None,
                            ) -> tuple[list[Endpoint], list[tuple[str, list[int]]]]:
    """One GPU per socket, each on a root port of its socket's host bridge."""
    if nodes is None or len(nodes) < 2:
        nodes = [("0-15,32-47", [10, 21]), ("16-31,48-63", [21, 10])]
    endpoints = [Endpoint("0000:17:00.0", ("pci0000:00", "0000:00:01.0"), 0, nodes[0][0], gen=gen, width=width,
                          max_gen=gen, max_width=width, name="GPU0"),
                 Endpoint("0000:b3:00.0", ("pci0000:80", "0000:80:01.0"), 1, nodes[1][0], gen=gen, width=width,
                          max_gen=gen, max_width=width, name="GPU1")]
    return endpoints, nodes


def read_demo_topology(profile_name: str, probe: Any) -> tuple[Topology, NumaSnapshot]:
    """A demo profile's topology and NUMA layout, read by the real code from its synthetic sysfs tree."""
    from hwtop.demo.variants import base_name, profile_of
    from hwtop.probes.numa import NumaProbe
    from hwtop.probes.topology import read_topology

    profile = profile_of(profile_name)  # a `profile:variant` spec lays out as its profile
    endpoints, nodes = layout_for(base_name(profile_name), profile.gpu_count, profile.gpu.pcie_max_gen,
                                  profile.gpu.pcie_max_width)
    from hwtop.demo.host import host_of, node_sizes

    sizes = node_sizes(host_of(profile))  # the nodes the simulated host has, to the byte
    with tempfile.TemporaryDirectory(prefix="hwtop-demo-sysfs-") as root:
        build(root, endpoints, nodes, sizes if len(sizes) == len(nodes) else None)
        numa = NumaProbe(root).read()
        gpus, links = probe.topology_inputs()
        return read_topology(root, gpus, links, f"demo:{profile_name}", numa=numa), numa
