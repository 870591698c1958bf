from __future__ import annotations

from pathlib import Path

from hwtop.probes.numa import NumaProbe, node_of_cpu
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
