"""NUMA layout from sysfs: nodes, their CPUs, memory and distance rows."""

from __future__ import annotations

import os
import re

from hwtop.model.snapshot import NumaNode, NumaSnapshot
from hwtop.probes.sysfs import parse_cpulist, parse_int_row, parse_meminfo_kb, read_text

NODE_DIR = "sys/devices/system/node"
_NODE_NAME = re.compile(r"^node(\d+)$")


def online_cpus(root: str = "/") -> tuple[int, ...]:
    """CPUs the kernel lists as online, falling back to os.cpu_count() when sysfs is absent."""
    text = read_text(root, "sys/devices/system/cpu/online")
    if text is not None:
        try:
            cpus = parse_cpulist(text)
            if cpus:
                return cpus
        except ValueError:
            pass
    return tuple(range(os.cpu_count() or 1))


class NumaProbe:
    """Reads the static layout once (or on `refresh`) and the per-node free memory every tick."""

    def __init__(self, root: str = "/") -> None:
        self.root = root
        self._layout: list[tuple[int, tuple[int, ...], tuple[int, ...]]] | None = None

    def refresh(self) -> None:
        self._layout = None

    def _read_layout(self) -> list[tuple[int, tuple[int, ...], tuple[int, ...]]]:
        try:
            names = os.listdir(os.path.join(self.root, NODE_DIR))
        except OSError:
            names = []
        layout = []
        for name in names:
            match = _NODE_NAME.match(name)
            if match is None:
                continue
            index = int(match.group(1))
            try:
                cpus = parse_cpulist(read_text(self.root, f"{NODE_DIR}/{name}/cpulist") or "")
            except ValueError:
                cpus = ()
            try:
                distances = parse_int_row(read_text(self.root, f"{NODE_DIR}/{name}/distance") or "")
            except ValueError:
                distances = ()
            layout.append((index, cpus, distances))
        layout.sort()
        return layout

    def read(self, fallback_memory_total: int | None = None) -> NumaSnapshot:
        if self._layout is None:
            self._layout = self._read_layout()
        if not self._layout:
            cpus = online_cpus(self.root)
            node = NumaNode(0, cpus, fallback_memory_total, None, (10,))
            return NumaSnapshot((node,), "fallback")
        nodes = []
        for index, cpus, distances in self._layout:
            meminfo = parse_meminfo_kb(read_text(self.root, f"{NODE_DIR}/node{index}/meminfo") or "")
            nodes.append(NumaNode(index, cpus, meminfo.get("MemTotal"), meminfo.get("MemFree"), distances))
        return NumaSnapshot(tuple(nodes), "sysfs")


def node_of_cpu(numa: NumaSnapshot | None) -> dict[int, int]:
    """Map each CPU to its node; CPUs no node lists belong to node 0."""
    mapping: dict[int, int] = {}
    if numa is not None:
        for node in numa.nodes:
            for cpu in node.cpus:
                mapping[cpu] = node.index
    return mapping
