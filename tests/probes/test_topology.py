"""Connection types from fixture sysfs trees laid out as real machines, checked against the matrix
`nvidia-smi topo -m` prints on such machines; NVLink counting; degraded-link detection; `hwtop topo`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hwtop.demo.nvml import FakeNvmlLibrary
from hwtop.demo.topology import Endpoint, build, dgx_a100
from hwtop.probes.gpu import NvmlProbe
from hwtop.probes.topology import count_nvlinks, nvlink_relations, read_topology

FIXTURES = Path(__file__).parents[1] / "fixtures" / "topo"


def expected(name: str) -> list[list[str]]:
    """A matrix as `nvidia-smi topo -m` prints it on such a machine (tests/fixtures/topo/NAME.txt)."""
    rows = [line.split("\t") for line in (FIXTURES / name).read_text().splitlines() if not line.startswith("#")]
    return [row[1:] for row in rows[1:]]


def test_dgx_a100_matrix(tmp_path: Path) -> None:
    endpoints, nodes = dgx_a100()
    root = build(str(tmp_path), endpoints, nodes)
    probe = NvmlProbe(FakeNvmlLibrary("dgx-a100").pynvml)
    topology = read_topology(root, *probe.topology_inputs())
    assert [list(r) for r in topology.links] == expected("dgx-a100.txt")
    assert [d.name for d in topology.devices][-8:] == [f"mlx5_{i}" for i in range(8)]
    assert topology.gpu_links[3][3] == "X" and topology.gpu_links[0][7] == "NV12"
    assert [d.numa_node for d in topology.devices[:8]] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert topology.devices[5].local_cpus[0] == 64 and topology.devices[0].nvlinks == 12


def test_dual_socket_workstation_gpus_on_both_sockets(tmp_path: Path) -> None:
    """GPU0 and GPU1 on root ports of socket 0's host bridge, GPU2 on socket 1: PHB and SYS."""
    eps = [Endpoint("0000:17:00.0", ("pci0000:00", "0000:00:01.0"), 0, "0-15", name="GPU0"),
           Endpoint("0000:65:00.0", ("pci0000:00", "0000:00:03.0"), 0, "0-15", name="GPU1"),
           Endpoint("0000:b3:00.0", ("pci0000:80", "0000:80:01.0"), 1, "16-31", name="GPU2")]
    root = build(str(tmp_path), eps, [("0-15", [10, 21]), ("16-31", [21, 10])])
    gpus = [("GPU0", "00000000:17:00.0"), ("GPU1", "00000000:65:00.0"), ("GPU2", "00000000:B3:00.0")]
    topology = read_topology(root, gpus, [])
    assert [list(r) for r in topology.gpu_links] == expected("dual-socket-workstation.txt")


def test_single_switch_and_two_host_bridges_on_one_node(tmp_path: Path) -> None:
    eps = [Endpoint("0000:03:00.0", ("pci0000:00", "0000:00:01.0", "0000:01:00.0", "0000:02:08.0"), 0, "0-7",
                    name="GPU0"),
           Endpoint("0000:04:00.0", ("pci0000:00", "0000:00:01.0", "0000:01:00.0", "0000:02:10.0"), 0, "0-7",
                    name="GPU1"),
           Endpoint("0000:41:00.0", ("pci0000:40", "0000:40:01.0"), 0, "0-7", name="GPU2")]
    root = build(str(tmp_path), eps, [("0-7", [10])])
    topology = read_topology(root, [("GPU0", "0000:03:00.0"), ("GPU1", "0000:04:00.0"),
                                    ("GPU2", "0000:41:00.0")], [])
    assert topology.gpu_links[0][1] == "PIX" and topology.gpu_links[0][2] == "NODE"


def test_laptop_single_gpu(tmp_path: Path) -> None:
    root = build(str(tmp_path), [Endpoint("0000:01:00.0", ("pci0000:00", "0000:00:01.0"), 0, "0-7", gen=3,
                                          width=8, max_gen=4, max_width=16, name="GPU0")], [("0-7", [10])])
    topology = read_topology(root, [("GPU0", "00000000:01:00.0")], [])
    assert topology.gpu_links == (("X",),)
    device = topology.devices[0]
    assert (device.link_gen, device.link_width, device.max_link_gen, device.max_link_width) == (3, 8, 4, 16)


def test_gpu_hidden_from_sysfs_is_placed_nowhere(tmp_path: Path) -> None:
    topology = read_topology(str(tmp_path), [("GPU0", "0000:01:00.0"), ("GPU1", "0000:02:00.0")], [])
    assert topology.gpu_links[0][1] == "SYS" and topology.devices[0].numa_node is None


def test_nvlink_counting_one_link_down() -> None:
    fake = FakeNvmlLibrary("dgx-a100")
    fake.pynvml.nvmlInit()
    handles = [fake.pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(8)]
    fake.set_link_down(2, 5)
    links = [count_nvlinks(fake.pynvml, h) for h in handles]
    assert links[0][0] == 12 and links[2][0] == 11
    pairs = nvlink_relations(links, [fake.profile.bus_id(i) for i in range(8)])
    assert pairs[(0, 1)] == 12 and pairs[(0, 2)] == 11 and pairs[(2, 0)] == 11


def test_direct_nvlink_between_two_cards() -> None:
    links = [(4, ("0000:65:00.0",) * 4), (4, ("0000:17:00.0",) * 4)]
    assert nvlink_relations(links, ["0000:17:00.0", "0000:65:00.0"]) == {(0, 1): 4, (1, 0): 4}


def test_no_nvlink_card_counts_zero() -> None:
    nvml = FakeNvmlLibrary("rtx3090").pynvml
    nvml.nvmlInit()
    assert count_nvlinks(nvml, nvml.nvmlDeviceGetHandleByIndex(0)) == (0, ())


def _hwtop(*args: str) -> str:
    return subprocess.run([sys.executable, "-m", "hwtop.cli.main", *args], capture_output=True, text=True,
                          check=True, timeout=60).stdout


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_topo_demo_dgx_prints_the_matrix_with_affinity() -> None:
    out = _hwtop("topo", "--demo", "dgx-a100")
    rows = [line.split() for line in out.splitlines() if line.startswith("GPU")]
    assert len(rows) == 8
    for i, row in enumerate(rows):
        assert row[1 + i] == "X" and all(c == "NV12" for j, c in enumerate(row[1:9]) if j != i)
        assert row[-2] == ("0-63,128-191" if i < 4 else "64-127,192-255") and row[-1] == ("0" if i < 4 else "1")
    assert "node distances:" in out and "   0:  10  32" in out


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_topo_on_this_machine_matches_lscpu() -> None:
    out = _hwtop("topo")
    lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    nodes = [line for line in lscpu.splitlines() if line.startswith("NUMA node") and "CPU(s):" in line
             and "node(s)" not in line]
    for line in nodes:
        label, cpus = line.split(":", 1)
        index = label.split("node")[1].split()[0]
        from hwtop.probes.sysfs import parse_cpulist

        expected = " ".join(map(str, parse_cpulist(cpus.strip())))
        assert f"node {index} cpus: {expected}" in out


def test_ethernet_nic_with_a_pci_device_is_placed(tmp_path: Path) -> None:
    import os

    eps = [Endpoint("0000:17:00.0", ("pci0000:00", "0000:00:01.0", "0000:01:00.0", "0000:02:08.0"), 0, "0-7",
                    name="GPU0"),
           Endpoint("0000:18:00.0", ("pci0000:00", "0000:00:01.0", "0000:01:00.0", "0000:02:10.0"), 0, "0-7",
                    kind="eth", name="ens1f0")]
    build(str(tmp_path), eps, [("0-7", [10])])
    net = tmp_path / "sys/class/net/ens1f0"
    net.mkdir(parents=True)
    (net / "speed").write_text("25000\n")
    os.symlink(tmp_path / "sys/bus/pci/devices/0000:18:00.0", net / "device")
    (tmp_path / "sys/class/net/lo").mkdir()  # no device: not a NIC to place
    topology = read_topology(str(tmp_path), [("GPU0", "0000:17:00.0")], [])
    assert [d.name for d in topology.devices] == ["GPU0", "ens1f0"]
    assert topology.links[0][1] == "PIX" and topology.devices[1].network_speed == "25 Gb/s"


def test_refresh_rereads_the_topology() -> None:
    from hwtop.session.controls import RefreshTopology
    from hwtop.session.sampler import Sampler

    calls = []

    def reader():
        calls.append(1)
        return read_topology("/nonexistent", [], [])

    sampler = Sampler(topology_reader=reader)
    sampler.sample()
    sampler.sample()
    assert len(calls) == 1
    sampler.send(RefreshTopology())
    assert sampler.sample().topology is not None and len(calls) == 2


def test_nvml_common_ancestor_cross_checks_and_fills_in_for_hidden_gpus(tmp_path: Path) -> None:
    import pynvml

    eps = [Endpoint("0000:17:00.0", ("pci0000:00", "0000:00:01.0"), 0, "0-15", name="GPU0"),
           Endpoint("0000:65:00.0", ("pci0000:00", "0000:00:03.0"), 0, "0-15", name="GPU1")]
    root = build(str(tmp_path), eps, [("0-15", [10])])
    fake = FakeNvmlLibrary("ws-2x3090")
    fake.set_common_ancestor(0, 1, pynvml.NVML_TOPOLOGY_SYSTEM)
    probe = NvmlProbe(fake.pynvml)
    gpus = [("GPU0", "0000:17:00.0"), ("GPU1", "0000:65:00.0")]
    relations = probe.common_ancestors()
    assert relations == {(0, 1): "SYS", (1, 0): "SYS"}
    checked = read_topology(root, gpus, [], nvml_relations=relations)
    assert checked.gpu_links[0][1] == "PHB" and checked.disagreements == ("GPU0-GPU1: sysfs PHB, NVML SYS",)
    hidden = read_topology(str(tmp_path / "empty"), gpus, [], nvml_relations=relations)
    assert hidden.gpu_links[0][1] == "SYS" and hidden.disagreements == ()


def test_common_ancestor_unsupported_gives_nothing() -> None:
    assert NvmlProbe(FakeNvmlLibrary("dgx-a100").pynvml).common_ancestors() == {}
