from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

from hwtop.probes.disks import HOLDERS_S, DiskProbe, device_for_path, disk_kind, whole_disks
from tests.sysfs_trees import write


def _block_tree(root: Path) -> Path:
    write(root, "sys/block/nvme0n1/queue/rotational", "0\n")
    write(root, "sys/block/sda/queue/rotational", "1\n")
    write(root, "sys/block/sdb/queue/rotational", "0\n")
    write(root, "sys/block/vda/queue/rotational", "1\n")
    write(root, "sys/block/loop0/queue/rotational", "0\n")
    write(root, "sys/block/zram0/queue/rotational", "0\n")
    write(root, "sys/block/sdc/queue/rotational", "garbage\n")
    return root


def test_kinds_from_name_and_rotational(tmp_path: Path) -> None:
    root = str(_block_tree(tmp_path))
    assert disk_kind("nvme0n1", root) == "nvme"
    assert disk_kind("sda", root) == "hdd"
    assert disk_kind("sdb", root) == "ssd"
    assert disk_kind("vda", root) == "virtual"  # virtio says rotational=1 whatever backs it
    assert disk_kind("sdc", root) == "unknown"
    assert disk_kind("sdz", root) == "unknown"
    assert whole_disks(root) == ["nvme0n1", "sda", "sdb", "sdc", "vda"]


def counters(read_bytes, write_bytes, reads, writes, busy_ms):
    return SimpleNamespace(read_bytes=read_bytes, write_bytes=write_bytes, read_count=reads, write_count=writes,
                           busy_time=busy_ms)


def test_rates_from_counters(tmp_path: Path) -> None:
    now = [100.0]
    samples = [{"sda": counters(0, 0, 0, 0, 0)}, {"sda": counters(300e6, 2e6, 900, 30, 1500)}]
    probe = DiskProbe(str(_block_tree(tmp_path)), counters=lambda: samples.pop(0), clock=lambda: now[0])
    first = probe.read()
    assert first[0].read_bytes_per_s is None and first[0].busy_percent is None
    now[0] += 2.0
    (disk,) = probe.read()
    assert disk.name == "sda" and disk.kind == "hdd"
    assert disk.read_bytes_per_s == 150e6 and disk.write_bytes_per_s == 1e6
    assert disk.read_iops == 450 and disk.write_iops == 15
    assert disk.busy_percent == 75.0


def test_device_for_path_resolves_partition_to_its_disk(tmp_path: Path) -> None:
    dev = os.stat(tmp_path).st_dev
    root = tmp_path / "root"
    write(root, "sys/devices/virtual/block/nvme0n1/nvme0n1p2/partition", "2\n")
    link = root / f"sys/dev/block/{os.major(dev)}:{os.minor(dev)}"
    link.parent.mkdir(parents=True)
    link.symlink_to(root / "sys/devices/virtual/block/nvme0n1/nvme0n1p2")
    assert device_for_path(str(tmp_path), str(root)) == "nvme0n1"
    assert device_for_path(str(tmp_path / "missing"), str(root)) is None


def test_disk_stats_read_diskstats_as_psutil_does(tmp_path: Path, monkeypatch) -> None:
    """The probe's own read of /proc/diskstats gives psutil.disk_io_counters(perdisk=True, nowrap=False)'s figures
    for the same files, read after read: every layout of a line, a counter going back, a device leaving the file
    and coming back, each read as it stands (wraps and resets are DiskProbe's rate meters' to judge)."""
    import psutil

    from hwtop.probes.disks import DiskStats

    def line(name: str, reads: int, rsect: int, writes: int, wsect: int, busy: int, layout: int = 18) -> str:
        if layout == 7:
            return f"   8       1 {name} {reads} {rsect} {writes} {wsect}\n"
        figures = [reads, 3, rsect, 40, writes, 5, wsect, 60, 0, busy, 70] + [0] * (layout - 14)
        if layout == 15:  # Linux 2.4: the reads before the name
            return f"   3 0 {reads} {name} 3 {rsect} 40 {writes} 5 {wsect} 60 0 {busy} 70 0\n"
        return f" 259       0 {name} " + " ".join(map(str, figures)) + "\n"

    reads = [  # each read of the file: (name, reads, read sectors, writes, written sectors, busy ms, layout)
        [("nvme0n1", 10, 800, 5, 40, 7, 18), ("sda", 2**40, 2**33, 1, 1, 9, 14), ("sda1", 1, 2, 3, 4, 0, 7)],
        [("nvme0n1", 20, 900, 6, 48, 9, 18), ("sda", 5, 2**33 + 8, 2, 3, 11, 14), ("sda1", 2, 3, 4, 5, 0, 7)],
        [("nvme0n1", 4, 100, 7, 50, 12, 20), ("sda", 9, 16, 3, 4, 12, 14), ("sda1", 0, 1, 5, 6, 0, 7)],
        [("nvme0n1", 8, 200, 9, 60, 13, 20), ("sda1", 1, 2, 6, 7, 0, 7)],
        [("nvme0n1", 9, 300, 10, 70, 14, 20), ("sda", 1, 2, 3, 4, 5, 14), ("hda", 7, 8, 9, 10, 11, 15)],
    ]
    monkeypatch.setattr(psutil, "PROCFS_PATH", str(tmp_path))
    psutil.disk_io_counters.cache_clear()
    ours = DiskStats(str(tmp_path), lambda: ["nvme0n1", "sda", "sda1", "hda", "absent"])
    for rows in reads:
        (tmp_path / "diskstats").write_text("".join(line(*row) for row in rows))
        got = ours()
        theirs = psutil.disk_io_counters(perdisk=True, nowrap=False)
        assert set(got) == set(theirs) - {"absent"}
        for name, figures in got.items():
            expected = theirs[name]
            assert figures == (expected.read_bytes, expected.write_bytes, expected.read_count, expected.write_count,
                               expected.busy_time), (name, rows)
    (tmp_path / "diskstats").write_text("   8 0 sda 1 2\n 259 0 nvme0n1 x 3 4 5 6 7 8 9 0 1 2\n   3 0 9 hda 3\n"
                                        + line("sda1", 1, 2, 3, 4, 0, 7))
    assert set(ours()) == {"sda1"}  # a line it cannot read leaves its disk out (N/A), never the whole file


def test_busy_time_wraps_at_32_bits_and_a_counter_going_back_is_a_gap(tmp_path: Path) -> None:
    """The kernel prints a disk's busy time as an unsigned int of ms (jiffies_to_msecs): it wraps at 2**32, and the
    rate across the wrap is the ms really spent (300 before it, 500 after: 800 ms in 1 s, 80 %). Any other counter
    going back (the device re-made under the same name) is a gap, not a figure."""
    root = _block_tree(tmp_path)
    write(root, "proc/diskstats", f" 8 0 sda 100 3 800 40 50 5 400 60 0 {2**32 - 300} 70\n")
    now = [10.0]
    probe = DiskProbe(str(root), clock=lambda: now[0])
    probe.read()
    write(root, "proc/diskstats", " 8 0 sda 90 3 900 40 60 5 500 60 0 500 70\n")
    now[0] += 1.0
    (disk,) = probe.read()
    assert disk.busy_percent == 80.0
    assert disk.read_iops is None and disk.write_iops == 10.0 and disk.read_bytes_per_s == 100 * 512


def test_an_array_member_names_its_array_whether_the_disk_or_a_partition_is_held(tmp_path: Path) -> None:
    """As the kernel lays it out: md1 over whole disks (their holders/ name it), md0 over partitions (the
    partition's holders/ do), dm-0 (LVM) over a partition of a disk whose other partition is a plain filesystem."""
    for name in ("nvme0n1", "nvme1n1", "nvme2n1", "nvme3n1", "sda", "md0", "md1", "dm-0"):
        write(tmp_path, f"sys/block/{name}/queue/rotational", "0\n")
    for member in ("nvme2n1", "nvme3n1"):
        (tmp_path / f"sys/block/{member}/holders/md1").mkdir(parents=True)
    for disk in ("nvme0n1", "nvme1n1"):
        write(tmp_path, f"sys/block/{disk}/{disk}p1/partition", "1\n")
        (tmp_path / f"sys/block/{disk}/{disk}p1/holders/md0").mkdir(parents=True)
        (tmp_path / f"sys/block/{disk}/holders").mkdir()
    write(tmp_path, "sys/block/sda/sda1/partition", "1\n")
    write(tmp_path, "sys/block/sda/sda2/partition", "2\n")
    (tmp_path / "sys/block/sda/sda2/holders/dm-0").mkdir(parents=True)
    (tmp_path / "sys/block/md1/holders").mkdir()
    zero = {name: counters(0, 0, 0, 0, 0) for name in whole_disks(str(tmp_path))}
    probe = DiskProbe(str(tmp_path), counters=lambda: zero, clock=lambda: 0.0)
    held = {d.name: d.held_by for d in probe.read()}
    assert held == {"dm-0": None, "md0": None, "md1": None, "nvme0n1": "md0", "nvme1n1": "md0", "nvme2n1": "md1",
                    "nvme3n1": "md1", "sda": "dm-0"}


def test_an_array_assembled_while_watched_is_seen_within_the_holders_interval(tmp_path: Path) -> None:
    for name in ("nvme0n1", "nvme1n1"):
        write(tmp_path, f"sys/block/{name}/queue/rotational", "0\n")
    now = [0.0]
    zero = {name: counters(0, 0, 0, 0, 0) for name in ("nvme0n1", "nvme1n1", "md0")}
    probe = DiskProbe(str(tmp_path), counters=lambda: zero, clock=lambda: now[0])
    assert {d.name: d.held_by for d in probe.read()} == {"nvme0n1": None, "nvme1n1": None}
    for member in ("nvme0n1", "nvme1n1"):  # mdadm --create /dev/md0 ... (the new device's own entry aside)
        (tmp_path / f"sys/block/{member}/holders/md0").mkdir(parents=True)
    now[0] = HOLDERS_S
    assert {d.name: d.held_by for d in probe.read()} == {"nvme0n1": "md0", "nvme1n1": "md0"}
