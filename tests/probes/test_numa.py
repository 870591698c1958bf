"""A node's "used" is the machine's: MemAvailable shared among the nodes by what each could free (MemFree, file
pages, reclaimable slab), so the nodes add up to the machine's figure and one node is the machine."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from hwtop.probes.numa import NumaProbe, share
from tests.sysfs_trees import write

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
