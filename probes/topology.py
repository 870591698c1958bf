"""Where things sit: GPU↔GPU and GPU↔NIC connection types in the vocabulary of `nvidia-smi topo -m`,
derived from the sysfs PCI device tree and NVML's NVLink state, against the NUMA layout.

    X     the device itself
    NV#   connected by # NVLinks (directly or through NVSwitch)
    PIX   through at most one PCIe switch
    PXB   through several PCIe switches, without the host bridge
    PHB   through a PCIe host bridge (the CPU's root complex)
    NODE  across host bridges within one NUMA node
    SYS   across NUMA nodes (the CPU interconnect)

Read once at start and on demand: the layout does not change while the box runs.
"""

from __future__ import annotations

import os
from typing import Any

import msgspec

from hwtop.model.snapshot import LinkState, NumaSnapshot, TopoDevice, TopoKind, Topology
from hwtop.probes.sysfs import parse_cpulist, read_text

PCI_DEVICES = "sys/bus/pci/devices"
_GEN_BY_RATE = {"2.5": 1, "5.0": 2, "5": 2, "8.0": 3, "8": 3, "16.0": 4, "16": 4, "32.0": 5, "32": 5, "64.0": 6,
                "64": 6}
# nvmlGpuTopologyLevel_t → the nvidia-smi words
NVML_LEVELS = {0: "X", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}
QUALITY = {"X": 0, "NV": 1, "PIX": 2, "PXB": 3, "PHB": 4, "NODE": 5, "SYS": 6}


class PciEndpoint(msgspec.Struct, frozen=True):
    """A GPU or NIC as sysfs places it."""

    name: str
    bus_id: str  # 0000:07:00.0, lower case
    chain: tuple[str, ...]  # host bridge first ("pci0000:00"), then each bridge, the device last
    numa_node: int | None
    local_cpus: tuple[int, ...] | None
    link: LinkState


def normalize_bus_id(bus_id: str) -> str:
    """NVML says 00000000:07:00.0, sysfs 0000:07:00.0: compare on the 4-digit domain, lower case."""
    bus_id = bus_id.strip().lower()
    domain, _, rest = bus_id.partition(":")
    return f"{int(domain, 16):04x}:{rest}" if rest else bus_id


def link_gen(speed: str | None) -> int | None:
    """"16.0 GT/s PCIe" → 4."""
    if not speed:
        return None
    return _GEN_BY_RATE.get(speed.split()[0])


def _int(text: str | None) -> int | None:
    try:
        return int(text.strip()) if text is not None else None
    except ValueError:
        return None


def read_endpoint(root: str, bus_id: str, name: str) -> PciEndpoint | None:
    bus_id = normalize_bus_id(bus_id)
    path = os.path.join(root, PCI_DEVICES, bus_id)
    if not os.path.exists(path):
        return None
    real = os.path.realpath(path)
    parts = real.split(os.sep)
    try:
        start = next(i for i, p in enumerate(parts) if p.startswith("pci"))
    except StopIteration:
        return None
    device = f"{PCI_DEVICES}/{bus_id}"
    node = _int(read_text(root, f"{device}/numa_node"))
    cpus_text = read_text(root, f"{device}/local_cpulist")
    try:
        cpus = parse_cpulist(cpus_text) if cpus_text is not None else None
    except ValueError:
        cpus = None
    return PciEndpoint(
        name=name, bus_id=bus_id, chain=tuple(parts[start:]),
        numa_node=None if node is None or node < 0 else node, local_cpus=cpus,
        link=LinkState(link_gen(read_text(root, f"{device}/current_link_speed")),
                       _int(read_text(root, f"{device}/current_link_width")),
                       link_gen(read_text(root, f"{device}/max_link_speed")),
                       _int(read_text(root, f"{device}/max_link_width"))),
    )


def pcie_relation(a: PciEndpoint, b: PciEndpoint) -> str:
    """The PCIe part of the `nvidia-smi topo -m` vocabulary, from the common ancestor of two sysfs paths."""
    if a.bus_id == b.bus_id:
        return "X"
    if a.chain[0] != b.chain[0]:  # different host bridges (root complexes)
        if a.numa_node is not None and a.numa_node == b.numa_node:
            return "NODE"
        return "SYS"
    below_a, below_b = a.chain[1:], b.chain[1:]  # bridges under the host bridge, the device last
    common = 0
    while common < min(len(below_a), len(below_b)) and below_a[common] == below_b[common]:
        common += 1
    if common == 0:
        return "PHB"  # different root ports of one host bridge: traffic crosses the CPU's root complex
    bridges_a = len(below_a) - common - 1  # bridges between the common ancestor and each device
    bridges_b = len(below_b) - common - 1
    if common >= 2 and max(bridges_a, bridges_b) <= 1:
        return "PIX"  # the common ancestor is a switch's upstream port: one switch
    return "PXB"


def count_nvlinks(nvml: Any, handle: Any, max_links: int = 18) -> tuple[int, tuple[str | None, ...]]:
    """Active NVLinks of a GPU and the PCI bus id at the far end of each (a GPU, or an NVSwitch)."""
    active = 0
    remotes: list[str | None] = []
    for link in range(max_links):
        try:
            state = nvml.nvmlDeviceGetNvLinkState(handle, link)
        except nvml.NVMLError:
            break  # INVALID_ARGUMENT past the last link, NOT_SUPPORTED without NVLink
        if not state:
            continue
        active += 1
        try:
            remote = nvml.nvmlDeviceGetNvLinkRemotePciInfo(handle, link)
            bus = remote.busId
            remotes.append(normalize_bus_id(bus.decode() if isinstance(bus, bytes) else str(bus)))
        except nvml.NVMLError:
            remotes.append(None)
    return active, tuple(remotes)


def nvlink_relations(links: list[tuple[int, tuple[str | None, ...]]], gpu_bus_ids: list[str]) -> dict[
        tuple[int, int], int]:
    """NVLink counts between GPU pairs: direct links count per pair; links to something that is not a GPU
    (NVSwitch) connect every switched GPU with every other, at the smaller of the two link counts."""
    index_of = {normalize_bus_id(b): i for i, b in enumerate(gpu_bus_ids)}
    direct: dict[tuple[int, int], int] = {}
    switched: dict[int, int] = {}
    for i, (_, remotes) in enumerate(links):
        for remote in remotes:
            j = index_of.get(remote) if remote else None
            if j is not None and j != i:
                direct[(i, j)] = direct.get((i, j), 0) + 1
            elif remote is not None:
                switched[i] = switched.get(i, 0) + 1
    result = dict(direct)
    for i, count_i in switched.items():
        for j, count_j in switched.items():
            if i != j:
                result[(i, j)] = result.get((i, j), 0) + min(count_i, count_j)
    return result


def link_matrix(endpoints: list[PciEndpoint], nvlinks: dict[tuple[int, int], int], gpu_count: int) -> list[
        list[str]]:
    """The connection type between every pair, GPUs first (NVLink where present), then NICs (PCIe only)."""
    matrix = []
    for i, a in enumerate(endpoints):
        row = []
        for j, b in enumerate(endpoints):
            if i == j:
                row.append("X")
            elif i < gpu_count and j < gpu_count and nvlinks.get((i, j)):
                row.append(f"NV{nvlinks[(i, j)]}")
            else:
                row.append(pcie_relation(a, b))
        matrix.append(row)
    return matrix


def list_nics(root: str) -> list[tuple[str, str, str | None]]:
    """(name, PCI bus id, link speed) of InfiniBand/RoCE HCAs (mlx5_0, ... as `nvidia-smi topo -m` names them),
    then of network interfaces backed by a PCI device that no HCA already covers (eth0, ens1f0, ...)."""
    nics: list[tuple[str, str, str | None]] = []
    seen: set[str] = set()
    for kind in ("infiniband", "net"):
        base = os.path.join(root, "sys/class", kind)
        try:
            names = sorted(os.listdir(base))
        except OSError:
            continue
        for name in names:
            device = os.path.join(base, name, "device")
            if not os.path.exists(device):
                continue  # virtual interfaces (lo, docker0, veth) have no device
            bus = os.path.basename(os.path.realpath(device))
            if bus in seen or not os.path.exists(os.path.join(root, PCI_DEVICES, bus)):
                continue
            seen.add(bus)
            if kind == "infiniband":
                rate = read_text(root, f"sys/class/infiniband/{name}/ports/1/rate")
                speed = rate.strip() if rate else None
            else:
                mbps = _int(read_text(root, f"sys/class/net/{name}/speed"))
                speed = f"{mbps // 1000} Gb/s" if mbps and mbps > 0 else None
            nics.append((name, bus, speed))
    return nics


def read_topology(root: str, gpus: list[tuple[str, str]], nvlinks: list[tuple[int, tuple[str | None, ...]]],
                  source: str = "sysfs", numa: NumaSnapshot | None = None,
                  nvml_relations: dict[tuple[int, int], str] | None = None) -> Topology:
    """`gpus`: (name, NVML bus id) per GPU index; `nvlinks`: count_nvlinks() per GPU (empty without NVML);
    `nvml_relations`: NVML's common-ancestor answer per GPU pair, the cross-check of the sysfs reading and the
    fallback where sysfs hides a GPU (a container)."""
    endpoints: list[PciEndpoint] = []
    kinds: list[TopoKind] = []
    missing = []
    for name, bus in gpus:
        endpoint = read_endpoint(root, bus, name)
        if endpoint is None:  # sysfs hides it (container): placed nowhere, compared as SYS
            missing.append(name)
            endpoint = PciEndpoint(name, normalize_bus_id(bus), (f"unknown-{name}",), None, None,
                                   LinkState(None, None, None, None))
        endpoints.append(endpoint)
        kinds.append("gpu")
    speeds: dict[str, str | None] = {}
    for name, bus, speed in list_nics(root):
        endpoint = read_endpoint(root, bus, name)
        if endpoint is not None:
            endpoints.append(endpoint)
            kinds.append("nic")
            speeds[name] = speed
    counts = nvlink_relations(nvlinks, [bus for _, bus in gpus]) if nvlinks else {}
    matrix = link_matrix(endpoints, counts, len(gpus))
    disagreements = []
    for (i, j), nvml_word in (nvml_relations or {}).items():
        if matrix[i][j].startswith("NV"):
            continue
        if gpus[i][0] in missing or gpus[j][0] in missing:
            matrix[i][j] = nvml_word  # sysfs cannot place it: NVML's word is all there is
        elif matrix[i][j] != nvml_word and i < j:
            disagreements.append(f"{gpus[i][0]}-{gpus[j][0]}: sysfs {matrix[i][j]}, NVML {nvml_word}")
    devices = tuple(
        TopoDevice(e.name, kind, e.bus_id, e.numa_node, e.local_cpus, e.link.gen, e.link.width, e.link.max_gen,
                   e.link.max_width, nvlinks[i][0] if kind == "gpu" and i < len(nvlinks) else None,
                   speeds.get(e.name) if kind == "nic" else None)
        for i, (e, kind) in enumerate(zip(endpoints, kinds, strict=True)))
    links = tuple(tuple(row) for row in matrix)
    gpu_links = tuple(tuple(row[: len(gpus)]) for row in links[: len(gpus)])
    return Topology(devices, links, gpu_links, source, numa, tuple(disagreements))
