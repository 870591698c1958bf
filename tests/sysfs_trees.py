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
