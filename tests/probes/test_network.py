"""The network probe on fake sysfs trees (IB/RoCE ports, a counter reset, a saturated legacy counter, a port
down, a file that vanishes, hostile names) and on this machine's loopback under a known load."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hwtop.model.snapshot import NicSnapshot, Snapshot, TopoDevice, Topology
from hwtop.probes.network import (
    IB_LEGACY_SATURATED,
    MAX_VIRTUAL,
    STATE_EVERY_S,
    NetworkProbe,
    parse_ib_rate,
    parse_ib_state,
    parse_int,
    parse_speed_mbps,
    place_nics,
    printable_name,
)
from tests.manual_clock import ManualClock
from tests.sysfs_trees import ib_port, netdev, pci_device, write


class Counters:
    """/proc/net/dev as psutil hands it over, changed by the test between reads."""

    def __init__(self, values: dict[str, tuple[int, int]]) -> None:
        self.values = values

    def __call__(self) -> dict[str, tuple[int, int]]:
        return dict(self.values)


def _box(root: Path) -> None:
    """Two HDR IB ports on node 0 and 1, a RoCE port with its netdev, a management port, loopback, a veth and
    docker0."""
    hca0 = pci_device(root, "0000:0c:00.0", 0)
    hca1 = pci_device(root, "0000:8d:00.0", 1, host_bridge="pci0000:80")
    roce = pci_device(root, "0000:e1:00.0", 1, host_bridge="pci0000:e0")
    mgmt = pci_device(root, "0000:c1:00.0", 1, host_bridge="pci0000:c0")
    ib_port(root, "mlx5_0", 1, device=hca0, rcv_words=1000, xmit_words=2000)
    ib_port(root, "mlx5_1", 1, device=hca1, rcv_words=0, xmit_words=0, state="1: DOWN", rate="10 Gb/sec (4X SDR)")
    ib_port(root, "mlx5_2", 1, device=roce, rcv_words=0, xmit_words=0, link_layer="Ethernet",
            rate="100 Gb/sec (4X EDR)", ndev="ens1f0")
    netdev(root, "ens1f0", device=roce, speed_mbps=100000)
    netdev(root, "eno1", device=mgmt, speed_mbps=1000)
    netdev(root, "lo", type_code=772, operstate="unknown")
    netdev(root, "veth1a2b", speed_mbps=10000)
    netdev(root, "docker0", operstate="down", speed_mbps=-1)


def _probe(root: Path) -> tuple[NetworkProbe, Counters, ManualClock]:
    counters = Counters({"lo": (0, 0), "eno1": (0, 0), "ens1f0": (0, 0), "veth1a2b": (0, 0), "docker0": (0, 0)})
    clock = ManualClock(1000.0)
    return NetworkProbe(str(root), counters=counters, clock=clock), counters, clock


def _by_key(nics: tuple[NicSnapshot, ...]) -> dict[tuple[str, int | None], NicSnapshot]:
    return {(n.name, n.port): n for n in nics}


def _set_words(root: Path, hca: str, rcv: int | str, xmit: int | str) -> None:
    write(root, f"sys/class/infiniband/{hca}/ports/1/counters/port_rcv_data", f"{rcv}\n")
    write(root, f"sys/class/infiniband/{hca}/ports/1/counters/port_xmit_data", f"{xmit}\n")


def test_kinds_links_and_placement_from_sysfs(tmp_path: Path) -> None:
    _box(tmp_path)
    probe, _, _ = _probe(tmp_path)
    nics = _by_key(probe.read())
    assert {key: (n.kind, n.state, n.speed_gbps, n.numa_node) for key, n in nics.items()} == {
        ("docker0", None): ("virtual", "down", None, None),
        ("eno1", None): ("ethernet", "up", 1.0, 1),
        ("ens1f0", None): ("ethernet", "up", 100.0, 1),
        ("lo", None): ("loopback", "unknown", None, None),
        ("veth1a2b", None): ("virtual", "up", None, None),
        ("mlx5_0", 1): ("infiniband", "active", 200.0, 0),
        ("mlx5_1", 1): ("infiniband", "down", 10.0, 1),
        ("mlx5_2", 1): ("roce", "active", 100.0, 1),
    }
    assert nics[("mlx5_2", 1)].netdev == "ens1f0"
    assert nics[("mlx5_0", 1)].bus_id == "0000:0c:00.0"
    assert nics[("mlx5_0", 1)].rx_bytes_total == 4000  # words x 4
    assert all(n.rx_bytes_per_s is None for n in nics.values())  # one sample: no rate yet
    assert [n.physical for n in nics.values()].count(False) == 3


def test_ib_rates_count_four_byte_words(tmp_path: Path) -> None:
    _box(tmp_path)
    probe, counters, clock = _probe(tmp_path)
    probe.read()
    clock.now += 2.0
    _set_words(tmp_path, "mlx5_0", 1000 + 12_500_000_000 // 4 * 2, 2000 + 5_000_000 // 4 * 2)
    counters.values["eno1"] = (250_000_000, 2_000)
    nics = _by_key(probe.read())
    assert nics[("mlx5_0", 1)].rx_bytes_per_s == 12_500_000_000.0  # 100 Gb/s of a 200 Gb/s port
    assert nics[("mlx5_0", 1)].tx_bytes_per_s == 5_000_000.0
    assert nics[("eno1", None)].rx_bytes_per_s == 125_000_000.0
    assert nics[("eno1", None)].tx_bytes_per_s == 1_000.0


def test_reset_and_saturated_counters_are_gaps_never_spikes(tmp_path: Path) -> None:
    _box(tmp_path)
    probe, counters, clock = _probe(tmp_path)
    _set_words(tmp_path, "mlx5_0", 10**9, 10**9)
    probe.read()
    clock.now += 1
    _set_words(tmp_path, "mlx5_0", 500, IB_LEGACY_SATURATED)  # reset (driver reload); legacy 32-bit stuck at max
    counters.values["eno1"] = (0, 0)
    counters.values["lo"] = (100, 100)
    nics = _by_key(probe.read())
    assert (nics[("mlx5_0", 1)].rx_bytes_per_s, nics[("mlx5_0", 1)].tx_bytes_per_s) == (None, None)
    assert nics[("mlx5_0", 1)].tx_bytes_total is None  # a saturated counter is no total either
    clock.now += 1
    _set_words(tmp_path, "mlx5_0", 1500, IB_LEGACY_SATURATED)
    nics = _by_key(probe.read())
    assert nics[("mlx5_0", 1)].rx_bytes_per_s == 4000.0  # the counter resumes from its reset value
    assert nics[("mlx5_0", 1)].tx_bytes_per_s is None  # still stuck: a gap, not 0 B/s
    clock.now += 1
    _set_words(tmp_path, "mlx5_0", 1500, 100)  # cleared (perfquery -x -r): starts afresh
    probe.read()
    clock.now += 1
    _set_words(tmp_path, "mlx5_0", 1500, 350)
    counters.values["lo"] = (50, 50)  # went backwards: a re-created interface
    nics = _by_key(probe.read())
    assert nics[("mlx5_0", 1)].tx_bytes_per_s == 1000.0
    assert nics[("lo", None)].rx_bytes_per_s is None


def test_vanished_files_and_interfaces_mid_read(tmp_path: Path) -> None:
    _box(tmp_path)
    probe, counters, clock = _probe(tmp_path)
    probe.read()
    clock.now += STATE_EVERY_S
    os.remove(tmp_path / "sys/class/infiniband/mlx5_0/ports/1/counters/port_rcv_data")
    os.remove(tmp_path / "sys/class/infiniband/mlx5_0/ports/1/state")
    os.remove(tmp_path / "sys/class/net/eno1/operstate")
    os.remove(tmp_path / "sys/class/net/eno1/device")
    counters.values["ghost0"] = (1, 1)  # in /proc/net/dev, gone from /sys before we looked
    nics = _by_key(probe.read())
    assert nics[("mlx5_0", 1)].rx_bytes_per_s is None and nics[("mlx5_0", 1)].state is None
    assert nics[("mlx5_0", 1)].tx_bytes_per_s is not None
    assert nics[("eno1", None)].state is None
    assert nics[("ghost0", None)].kind == "virtual"
    import shutil

    shutil.rmtree(tmp_path / "sys/class/infiniband/mlx5_1")  # hot-unplugged
    clock.now += STATE_EVERY_S
    del counters.values["ghost0"]
    nics = _by_key(probe.read())
    assert ("mlx5_1", 1) not in nics and ("ghost0", None) not in nics


def test_no_network_sysfs_at_all(tmp_path: Path) -> None:
    probe = NetworkProbe(str(tmp_path), counters=Counters({"eth0": (1, 2)}), clock=ManualClock(1000.0))
    (nic,) = probe.read()
    assert (nic.name, nic.kind, nic.speed_gbps, nic.state) == ("eth0", "virtual", None, None)
    assert NetworkProbe(str(tmp_path), counters=Counters({}), clock=ManualClock(1000.0)).read() == ()


def test_hostile_names_stay_text_a_record_can_carry(tmp_path: Path) -> None:
    hostile = "ev\x1b[31mil\udcff"  # an escape sequence and a byte that is not UTF-8, as os.listdir hands it over
    netdev(tmp_path, "ev\x1b[31mil\udcff".encode("utf-8", "surrogateescape").decode("utf-8", "surrogateescape"))
    probe = NetworkProbe(str(tmp_path), counters=Counters({hostile: (1, 2)}), clock=ManualClock(1000.0))
    (nic,) = probe.read()
    assert nic.name == "ev\x1b[31mil\\xff"
    assert nic.state == "up"  # the sysfs files were found under the real name
    snapshot = Snapshot(time=0.0, interval_s=None, host=None, cpu=None, memory=None, numa=None, nics=(nic,))
    assert msgspec.json.decode(snapshot.to_json())["nics"][0]["name"] == "ev\x1b[31mil\\xff"


def test_placement_from_the_topology(tmp_path: Path) -> None:
    def device(name: str, kind: str, bus: str, node: int) -> TopoDevice:
        return TopoDevice(name, kind, bus, node, None, None, None, None, None)

    devices = (device("GPU0", "gpu", "0000:07:00.0", 0), device("GPU1", "gpu", "0000:87:00.0", 1),
               device("mlx5_0", "nic", "0000:0c:00.0", 0), device("mlx5_1", "nic", "0000:8d:00.0", 1))
    links = (("X", "SYS", "PXB", "SYS"), ("SYS", "X", "SYS", "PIX"), ("PXB", "SYS", "X", "SYS"),
             ("SYS", "PIX", "SYS", "X"))
    topology = Topology(devices, links, (("X", "SYS"), ("SYS", "X")), "sysfs")
    nics = (NicSnapshot("mlx5_0", "infiniband", 200.0, None, None, port=1, bus_id="0000:0c:00.0"),
            NicSnapshot("mlx5_1", "infiniband", 200.0, None, None, port=1),  # no address: by name (a demo)
            NicSnapshot("lo", "loopback", None, None, None))
    placed = place_nics(nics, topology)
    assert [(n.nearest_gpu, n.numa_node) for n in placed] == [(0, 0), (1, 1), (None, None)]
    assert place_nics(nics, None) is nics


def test_this_machine_reads_without_error() -> None:
    nics = NetworkProbe().read()
    assert any(n.kind == "loopback" for n in nics)
    assert all(n.rx_bytes_per_s is None for n in nics)


@pytest.mark.slow  # loopback is shared: the fast suite's other workers talk on it in bursts (HTTP stand-ins)
def test_known_load_on_loopback_is_measured_within_ten_percent() -> None:
    """A sender at a fixed rate on 127.0.0.1 for one second: the probe's rate on lo matches what was sent. The rate
    is high (300 MB/s) so that what else talks on loopback meanwhile (other tests' HTTP) stays in the noise."""
    rate_wanted, chunk = 300e6, b"x" * 60_000  # in 60 kB datagrams (headers are 0.1 %)
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        receiver.bind(("127.0.0.1", 0))  # never read: the kernel drops past the buffer, after lo counted it
        target = receiver.getsockname()
        probe = NetworkProbe()
        probe.read()
        time.sleep(0.5)  # the half second before: what else talks on loopback now (other tests' HTTP, a scrape)
        quiet = next(n for n in probe.read() if n.name == "lo").tx_bytes_per_s or 0.0
        start = time.monotonic()
        sent = 0
        while (now := time.monotonic()) - start < 1.0:
            if sent < rate_wanted * (now - start):
                sent += sender.sendto(chunk, target)
            else:
                time.sleep(0.002)
        lo = next(n for n in probe.read() if n.name == "lo")
        elapsed = time.monotonic() - start
    finally:
        sender.close()
        receiver.close()
    assert lo.tx_bytes_per_s is not None
    achieved = sent / elapsed
    assert achieved > 0.5 * rate_wanted  # the box kept up well enough for the comparison to mean something
    # never less than was sent; more only by what else talked on loopback, as much as in the half second before
    assert 0.9 * achieved <= lo.tx_bytes_per_s <= 1.1 * achieved + 2 * quiet, (lo.tx_bytes_per_s, achieved, quiet)


@given(st.text(max_size=30))
def test_sysfs_parsers_never_raise(text: str) -> None:
    for parse in (parse_int, parse_ib_state, parse_ib_rate, parse_speed_mbps):
        parse(text)
    assert parse_int(None) is None and parse_ib_rate(None) is None


@given(st.floats(min_value=0.1, max_value=3200, allow_nan=False), st.sampled_from(["4X HDR", "1X SDR", "8X NDR"]))
def test_ib_rate_round_trips(value: float, width: str) -> None:
    assert parse_ib_rate(f"{value} Gb/sec ({width})") == value


@given(st.integers(min_value=-5, max_value=10**7))
def test_speed_is_gbps_or_none(mbps: int) -> None:
    speed = parse_speed_mbps(f"{mbps}\n")
    assert speed is None if mbps <= 0 else speed == mbps / 1000


@given(st.binary(max_size=20))
def test_any_name_bytes_become_encodable_text(raw: bytes) -> None:
    name = printable_name(raw.decode("utf-8", "surrogateescape"))
    name.encode("utf-8")  # no lone surrogates left
    assert parse_ib_state("4: ACTIVE") == "active"


def test_hundreds_of_veths_keep_the_busiest_in_the_snapshot(tmp_path: Path) -> None:
    _box(tmp_path)
    counters = Counters({"lo": (0, 0), "eno1": (0, 0), **{f"veth{i:03d}": (0, 0) for i in range(300)}})
    clock = ManualClock(1000.0)
    probe = NetworkProbe(str(tmp_path), counters=counters, clock=clock)
    assert len(probe.read()) == 2 + MAX_VIRTUAL + 3  # lo, eno1, 32 veths, the three HCA ports
    clock.now += 1
    counters.values["veth299"] = (5_000_000, 0)
    nics = probe.read()
    assert "veth299" in [n.name for n in nics] and sum(n.kind == "virtual" for n in nics) == MAX_VIRTUAL
    assert [n.name for n in nics][:2] == ["eno1", "lo"]


def test_a_vms_virtio_nic_is_placed_by_the_pci_function_above_it(tmp_path: Path) -> None:
    function = pci_device(tmp_path, "0000:00:03.0", 1)
    (tmp_path / function / "virtio2").mkdir()
    netdev(tmp_path, "eth0", device=f"{function}/virtio2")
    (nic,) = NetworkProbe(str(tmp_path), counters=Counters({"eth0": (1, 1)}), clock=ManualClock(1000.0)).read()
    assert (nic.kind, nic.bus_id, nic.numa_node) == ("ethernet", "0000:00:03.0", 1)


def test_proc_counters_read_net_dev_as_psutil_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The probe's own read of /proc/net/dev gives psutil's figures for the same file: names with odd bytes and
    spaces before the colon, counters past 32 bits; psutil's procfs path is the file read."""
    import psutil

    from hwtop.probes.network import proc_counters, psutil_counters

    header = ("Inter-|   Receive                                                |  Transmit\n"
              " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls "
              "carrier compressed\n")
    rows = [("    lo", 2**40 + 7, 2**33), ("  eth0", 123, 456), ("weird\\xff\\x1cname", 1, 2), ("ib0", 0, 2**63)]
    text = header + "".join(f"{name}: {rx} 1 0 0 0 0 0 0 {tx} 2 0 0 0 0 0 0\n" for name, rx, tx in rows)
    (tmp_path / "net").mkdir()
    (tmp_path / "net/dev").write_bytes(text.encode().replace(b"\\xff", b"\xff").replace(b"\\x1c", b"\x1c"))
    monkeypatch.setattr(psutil, "PROCFS_PATH", str(tmp_path))
    ours = proc_counters(str(tmp_path))
    assert ours == psutil_counters()
    assert ours["lo"] == (2**40 + 7, 2**33) and len(ours) == 4
