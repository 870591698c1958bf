"""Builders for procfs/sysfs fixture trees laid out as real machines lay them out."""

from __future__ import annotations

from pathlib import Path


def write(root: Path, path: str, text: str) -> None:
    target = root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)


def numa_tree(root: Path, nodes: list[tuple[str, list[int], int, int]]) -> Path:
    """nodes: (cpulist text, distance row, MemTotal kB, MemFree kB) per node, as /sys/devices/system/node has."""
    cpus = []
    for index, (cpulist, distances, total_kb, free_kb) in enumerate(nodes):
        base = f"sys/devices/system/node/node{index}"
        write(root, f"{base}/cpulist", cpulist + "\n")
        write(root, f"{base}/distance", " ".join(map(str, distances)) + "\n")
        write(root, f"{base}/meminfo",
              f"Node {index} MemTotal:       {total_kb} kB\nNode {index} MemFree:        {free_kb} kB\n"
              f"Node {index} MemUsed:        {total_kb - free_kb} kB\n")
        cpus.append(cpulist)
    write(root, "sys/devices/system/node/online", f"0-{len(nodes) - 1}\n")
    return root


def two_socket_four_node(root: Path) -> Path:
    """A 2-socket EPYC with NPS2: 4 nodes of 16 cores + 16 SMT siblings each (128 logical CPUs)."""
    rows = [[10, 12, 32, 32], [12, 10, 32, 32], [32, 32, 10, 12], [32, 32, 12, 10]]
    nodes = []
    for n in range(4):
        cpulist = f"{n * 16}-{n * 16 + 15},{64 + n * 16}-{64 + n * 16 + 15}"
        nodes.append((cpulist, rows[n], 131_072_000, 100_000_000 - n * 1000))
    numa_tree(root, nodes)
    write(root, "sys/devices/system/cpu/online", "0-127\n")
    return root


def laptop(root: Path) -> Path:
    numa_tree(root, [("0-7", [10], 16_000_000, 9_000_000)])
    write(root, "sys/devices/system/cpu/online", "0-7\n")
    return root


def container_without_numa(root: Path) -> Path:
    write(root, "sys/devices/system/cpu/online", "0-3\n")
    return root


def pci_device(root: Path, bus_id: str, numa_node: int, host_bridge: str = "pci0000:00") -> str:
    """A PCI function under a host bridge, linked from /sys/bus/pci/devices; returns its sysfs path (relative)."""
    device = f"sys/devices/{host_bridge}/{bus_id}"
    write(root, f"{device}/numa_node", f"{numa_node}\n")
    link = root / "sys/bus/pci/devices" / bus_id
    link.parent.mkdir(parents=True, exist_ok=True)
    if not link.is_symlink():
        link.symlink_to(root / device)
    return device


def netdev(root: Path, name: str, *, device: str | None = None, speed_mbps: int | None = None,
           operstate: str = "up", type_code: int = 1) -> None:
    """/sys/class/net/NAME as the kernel lays it out: type, operstate, speed; `device` a PCI function's path."""
    base = f"sys/class/net/{name}"
    write(root, f"{base}/type", f"{type_code}\n")
    write(root, f"{base}/operstate", f"{operstate}\n")
    if speed_mbps is not None:
        write(root, f"{base}/speed", f"{speed_mbps}\n")
    if device is not None:
        (root / base / "device").symlink_to(root / device)


def ib_port(root: Path, hca: str, port: int, *, device: str | None, rcv_words: int | None, xmit_words: int | None,
            state: str = "4: ACTIVE", rate: str = "200 Gb/sec (4X HDR)", link_layer: str = "InfiniBand",
            ndev: str | None = None) -> None:
    """/sys/class/infiniband/HCA/ports/N with its 4-byte-word data counters (None: no counter file)."""
    base = f"sys/class/infiniband/{hca}"
    if device is not None and not (root / base / "device").is_symlink():
        (root / base).mkdir(parents=True, exist_ok=True)
        (root / base / "device").symlink_to(root / device)
    write(root, f"{base}/ports/{port}/state", f"{state}\n")
    write(root, f"{base}/ports/{port}/rate", f"{rate}\n")
    write(root, f"{base}/ports/{port}/link_layer", f"{link_layer}\n")
    if ndev is not None:
        write(root, f"{base}/ports/{port}/gid_attrs/ndevs/0", f"{ndev}\n")
    for counter, words in (("port_rcv_data", rcv_words), ("port_xmit_data", xmit_words)):
        if words is not None:
            write(root, f"{base}/ports/{port}/counters/{counter}", f"{words}\n")
