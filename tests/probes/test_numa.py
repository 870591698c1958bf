"""The NUMA probe: nodes, their CPUs and distances from sysfs; a node's "used" is the machine's: MemAvailable
shared among the nodes by what each could free (MemFree, file pages, reclaimable slab), so the nodes add up to the
machine's figure and one node is the machine."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from hwtop.probes.numa import NumaProbe, node_of_cpu, share
from tests.sysfs_trees import container_without_numa, laptop, two_socket_four_node, write


def test_two_socket_four_node_layout(tmp_path: Path) -> None:
    numa = NumaProbe(str(two_socket_four_node(tmp_path))).read()
    assert numa.source == "sysfs"
    assert [n.index for n in numa.nodes] == [0, 1, 2, 3]
    assert numa.nodes[1].cpus == tuple(range(16, 32)) + tuple(range(80, 96))
    assert numa.nodes[2].distances == (32, 32, 10, 12)
    assert numa.nodes[0].memory_total_bytes == 131_072_000 * 1024
    assert numa.nodes[3].memory_free_bytes == (100_000_000 - 3000) * 1024
    mapping = node_of_cpu(numa)
    assert mapping[0] == 0 and mapping[64] == 0 and mapping[127] == 3 and mapping[40] == 2
    assert len(mapping) == 128


def test_laptop_is_one_node(tmp_path: Path) -> None:
    numa = NumaProbe(str(laptop(tmp_path))).read()
    assert len(numa.nodes) == 1 and numa.nodes[0].cpus == tuple(range(8)) and numa.nodes[0].distances == (10,)


def test_container_without_numa_sysfs_is_one_node_of_all_online_cpus(tmp_path: Path) -> None:
    numa = NumaProbe(str(container_without_numa(tmp_path))).read(fallback_memory_total=123)
    assert numa.source == "fallback"
    assert numa.nodes[0].cpus == (0, 1, 2, 3)
    assert numa.nodes[0].memory_total_bytes == 123


def test_garbage_node_files_do_not_break_the_probe(tmp_path: Path) -> None:
    laptop(tmp_path)
    write(tmp_path, "sys/devices/system/node/node0/cpulist", "garbage\n")
    write(tmp_path, "sys/devices/system/node/node0/distance", "ten\n")
    write(tmp_path, "sys/devices/system/node/node0/meminfo", "\x00\x01 nonsense")
    numa = NumaProbe(str(tmp_path)).read()
    assert numa.nodes[0].cpus == () and numa.nodes[0].distances == ()
    assert numa.nodes[0].memory_total_bytes is None


def test_memory_only_node(tmp_path: Path) -> None:
    two_socket_four_node(tmp_path)
    write(tmp_path, "sys/devices/system/node/node4/cpulist", "\n")
    write(tmp_path, "sys/devices/system/node/node4/distance", "30 30 30 30 10\n")
    numa = NumaProbe(str(tmp_path)).read()
    assert numa.nodes[4].cpus == ()


def test_live_machine_nodes_match_sysfs() -> None:
    import os

    numa = NumaProbe().read()
    listed = sorted(int(n[4:]) for n in os.listdir("/sys/devices/system/node") if n[4:].isdigit()) \
        if os.path.isdir("/sys/devices/system/node") else [0]
    assert [n.index for n in numa.nodes] == listed


KIB = 1024


def _node(root: Path, index: int, total_kb: int, free_kb: int, file_kb: int, slab_kb: int) -> None:
    base = f"sys/devices/system/node/node{index}"
    write(root, f"{base}/cpulist", f"{index}\n")
    write(root, f"{base}/distance", "10 21\n" if index == 0 else "21 10\n")
    write(root, f"{base}/meminfo",
          f"Node {index} MemTotal: {total_kb} kB\nNode {index} MemFree: {free_kb} kB\n"
          f"Node {index} Active(file): {file_kb // 2} kB\nNode {index} Inactive(file): {file_kb - file_kb // 2} kB\n"
          f"Node {index} SReclaimable: {slab_kb} kB\n")


def test_one_node_is_the_machine_to_the_byte(tmp_path: Path) -> None:
    _node(tmp_path, 0, 24_683_792, 23_000_000, 600_000, 130_000)  # page cache: MemFree alone would say more used
    available = 23_600_000 * KIB  # the kernel's MemAvailable
    node = NumaProbe(str(tmp_path)).read(24_683_792 * KIB, available).nodes[0]
    assert node.memory_available_bytes == available
    assert node.memory_used_bytes == 24_683_792 * KIB - available


def test_two_nodes_share_the_machines_available_by_what_each_could_free(tmp_path: Path) -> None:
    _node(tmp_path, 0, 100_000_000, 10_000_000, 20_000_000, 0)  # could free 30 GB
    _node(tmp_path, 1, 100_000_000, 50_000_000, 10_000_000, 0)  # could free 60 GB
    available = 81_000_000 * KIB
    nodes = NumaProbe(str(tmp_path)).read(200_000_000 * KIB, available).nodes
    assert [n.memory_available_bytes for n in nodes] == [27_000_000 * KIB, 54_000_000 * KIB]
    assert sum(n.memory_used_bytes or 0 for n in nodes) == 200_000_000 * KIB - available


@given(st.integers(0, 10**15), st.lists(st.integers(0, 10**13), min_size=1, max_size=8))
def test_shares_add_up_and_stay_within_each_node(available: int, weights: list[int]) -> None:
    totals = [w + 10**13 for w in weights]
    available = min(available, sum(totals))
    parts = share(available, list(weights), list(totals))
    assert all(p is not None and 0 <= p <= t for p, t in zip(parts, totals, strict=True))
    whole = sum(weights)
    if whole and all(available * w // whole + len(weights) <= t for w, t in zip(weights, totals, strict=True)):
        assert sum(p or 0 for p in parts) == available


NODE_MEMINFO = """Node 1 MemTotal:       131072000 kB
Node 1 MemFree:         1000 kB
Node 1 MemUsed:        130071000 kB
Node 1 SwapCached:            0 kB
Node 1 Active:          5000000 kB
Node 1 Inactive:        6000000 kB
Node 1 Active(anon):     100000 kB
Node 1 Inactive(anon):   200000 kB
Node 1 Active(file):    4900000 kB
Node 1 Inactive(file):  5800000 kB
Node 1 Dirty:                12 kB
Node 1 KReclaimable:     700000 kB
Node 1 Slab:             900000 kB
Node 1 SReclaimable:     650000 kB
Node 1 SUnreclaim:       250000 kB
Node 1 HugePages_Total:     0
Node 1 HugePages_Free:      0
"""


def test_node_meminfo_reads_what_the_general_parser_reads() -> None:
    from hwtop.probes.numa import _NODE_KEYS, node_meminfo
    from hwtop.probes.sysfs import parse_meminfo_kb

    lines = NODE_MEMINFO.splitlines(keepends=True)
    for text in (NODE_MEMINFO, "".join(reversed(lines)), NODE_MEMINFO.replace("Node 1 SReclaimable:", "SReclaimable:"),
                 NODE_MEMINFO.replace("Node 1 MemFree:         1000 kB", "Node 1 MemFree: 1000"), ""):
        assert node_meminfo(text) == parse_meminfo_kb(text, _NODE_KEYS)
    assert node_meminfo(NODE_MEMINFO)["Inactive(file)"] == 5800000 * 1024
