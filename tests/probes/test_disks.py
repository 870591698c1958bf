from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

from hwtop.probes.disks import DiskProbe, device_for_path, disk_kind, whole_disks
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
