"""NUMA layout from sysfs: nodes, their CPUs, memory and distance rows.

Memory "used" on a node means what it means for the machine: total − available (see MemorySnapshot). The kernel
publishes MemAvailable for the machine only, so the machine's figure is shared among the nodes in proportion to
what each could give a new program: its MemFree, its file pages and its reclaimable slab, the parts the kernel's
own MemAvailable counts. The nodes then add up to the machine (one node is exactly the machine), where MemFree
alone would count the page cache as used (`RAM 443.6M` beside `node0 734.1M` on one machine)."""

from __future__ import annotations

import os
import re

import msgspec

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

    def read(self, fallback_memory_total: int | None = None, available_total: int | None = None) -> NumaSnapshot:
        """`available_total`: the machine's MemAvailable (MemorySnapshot.available_bytes), shared among the nodes."""
        if self._layout is None:
            self._layout = self._read_layout()
        if not self._layout:
            cpus = online_cpus(self.root)
            node = NumaNode(0, cpus, fallback_memory_total, None, (10,))
            return NumaSnapshot((with_available(node, available_total),), "fallback")
        nodes, could_give = [], []
        for index, cpus, distances in self._layout:
            meminfo = node_meminfo(read_text(self.root, f"{NODE_DIR}/node{index}/meminfo") or "")
            nodes.append(NumaNode(index, cpus, meminfo.get("MemTotal"), meminfo.get("MemFree"), distances))
            could_give.append(_reclaimable(meminfo))
        shares = share(available_total, could_give, [n.memory_total_bytes for n in nodes])
        return NumaSnapshot(tuple(with_available(n, a) for n, a in zip(nodes, shares, strict=True)), "sysfs")


_NODE_KEYS = frozenset({"MemTotal", "MemFree", "Active(file)", "Inactive(file)", "SReclaimable"})  # all read() uses
# the kernel's own line for each of them (drivers/base/node.c: "Node %d %s:%8lu kB"), found in one pass
_NODE_LINE = re.compile(rf"^Node \d+ ({'|'.join(map(re.escape, sorted(_NODE_KEYS)))}): +(\d+) kB$", re.MULTILINE)


def node_meminfo(text: str) -> dict[str, int]:
    """The five figures read() uses of a node's meminfo, in bytes: as parse_meminfo_kb reads them, from one search
    for the kernel's own lines (a node's file has ~36 lines, read every tick); any other text, by that parser."""
    found = {key: int(number) * 1024 for key, number in _NODE_LINE.findall(text)}
    return found if len(found) == len(_NODE_KEYS) else parse_meminfo_kb(text, _NODE_KEYS)


def _reclaimable(meminfo: dict[str, int]) -> int | None:
    """What a node could give a new program: MemFree + file pages + reclaimable slab (capped at its size)."""
    free = meminfo.get("MemFree")
    if free is None:
        return None
    extra = sum(meminfo.get(key, 0) for key in ("Active(file)", "Inactive(file)", "SReclaimable"))
    total = meminfo.get("MemTotal")
    return free + extra if total is None else min(total, free + extra)


def share(available_total: int | None, weights: list[int | None], totals: list[int | None]) -> list[int | None]:
    """`available_total` split in proportion to `weights` (whole bytes that add up to it, none above its node's
    total); without a machine figure, the weights themselves. A node without a weight gets None."""
    if available_total is None or any(w is None for w in weights):
        return list(weights)
    known = [w or 0 for w in weights]
    whole = sum(known)
    if whole <= 0:
        known = [t or 0 for t in totals]
        whole = sum(known)
    if whole <= 0:
        return [None] * len(weights)
    parts = [available_total * w // whole for w in known]
    parts[max(range(len(parts)), key=lambda i: known[i])] += available_total - sum(parts)  # the rounding
    return [p if t is None else max(0, min(t, p)) for p, t in zip(parts, totals, strict=True)]


def with_available(node: NumaNode, available: int | None) -> NumaNode:
    """The node with its share of MemAvailable and the "used" that follows from it (total − available)."""
    total = node.memory_total_bytes
    used = None if total is None or available is None else max(0, total - available)
    return msgspec.structs.replace(node, memory_available_bytes=available, memory_used_bytes=used)


def node_of_cpu(numa: NumaSnapshot | None) -> dict[int, int]:
    """Map each CPU to its node; CPUs no node lists belong to node 0."""
    mapping: dict[int, int] = {}
    if numa is not None:
        for node in numa.nodes:
            for cpu in node.cpus:
                mapping[cpu] = node.index
    return mapping
