"""Block devices: throughput, IOPS and busy time as rates, and what kind of device each is."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from typing import Any

import psutil

from hwtop.model.snapshot import DiskKind, DiskSnapshot
from hwtop.probes.rates import RateMeter
from hwtop.probes.sysfs import read_text

# Memory-backed or placeholder devices that carry no dataset and would only clutter the panel.
_HIDDEN = re.compile(r"^(loop|ram|zram|fd|sr)\d*")
_VIRTUAL = re.compile(r"^(vd|xvd)[a-z]+$")

CountersSource = Callable[[], Mapping[str, Any]]


_RAID = re.compile(r"^md\d+$")


def disk_kind(name: str, root: str = "/") -> DiskKind:
    """nvme, ssd or hdd as the kernel sees the device; virtio/Xen disks say nothing real, so "virtual"; an md
    array is "raid" (its rotational flag is 0 whatever it is built of: its members are listed as themselves)."""
    if name.startswith("nvme"):
        return "nvme"
    if _VIRTUAL.match(name):
        return "virtual"
    if _RAID.match(name):
        return "raid"
    rotational = read_text(root, f"sys/block/{name}/queue/rotational")
    if rotational is None:
        return "unknown"
    return "hdd" if rotational.strip() == "1" else "ssd" if rotational.strip() == "0" else "unknown"


def whole_disks(root: str = "/") -> list[str]:
    try:
        names = sorted(os.listdir(os.path.join(root, "sys/block")))
    except OSError:
        return []
    return [n for n in names if not _HIDDEN.match(n)]


def device_for_path(path: str, root: str = "/") -> str | None:
    """The whole disk (e.g. "nvme0n1") holding `path`, or None where it cannot be known (overlay, tmpfs)."""
    try:
        st_dev = os.stat(path).st_dev
    except OSError:
        return None
    link = os.path.join(root, f"sys/dev/block/{os.major(st_dev)}:{os.minor(st_dev)}")
    if not os.path.exists(link):
        return None
    real = os.path.realpath(link)
    if os.path.exists(os.path.join(real, "partition")):
        real = os.path.dirname(real)
    return os.path.basename(real)


class DiskProbe:
    def __init__(self, root: str = "/", counters: CountersSource | None = None,
                 clock: Callable[[], float] | None = None) -> None:
        import time

        self.root = root
        self._counters = counters or (lambda: psutil.disk_io_counters(perdisk=True, nowrap=True) or {})
        self._clock = clock or time.monotonic
        self._rates = RateMeter()
        self._kinds: dict[str, DiskKind] = {}
        self._names: list[str] | None = None

    def read(self) -> tuple[DiskSnapshot, ...]:
        if self._names is None:
            self._names = whole_disks(self.root)
        now = self._clock()
        counters = self._counters()
        disks = []
        for name in self._names:
            counter = counters.get(name)
            if counter is None:
                continue
            kind = self._kinds.get(name)
            if kind is None:
                kind = self._kinds[name] = disk_kind(name, self.root)
            busy_ms = self._rates.rate((name, "busy"), float(getattr(counter, "busy_time", 0)), now)
            disks.append(DiskSnapshot(
                name=name,
                kind=kind,
                read_bytes_per_s=self._rates.rate((name, "rb"), float(counter.read_bytes), now),
                write_bytes_per_s=self._rates.rate((name, "wb"), float(counter.write_bytes), now),
                read_iops=self._rates.rate((name, "rc"), float(counter.read_count), now),
                write_iops=self._rates.rate((name, "wc"), float(counter.write_count), now),
                busy_percent=None if busy_ms is None else min(100.0, busy_ms / 10.0),
            ))
        return tuple(disks)
