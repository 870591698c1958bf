"""Block devices: throughput, IOPS and busy time as rates, and what kind of device each is."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from hwtop.model.snapshot import DiskKind, DiskSnapshot
from hwtop.probes.rates import RateMeter
from hwtop.probes.sysfs import proc_lines, read_text

# Memory-backed or placeholder devices that carry no dataset and would only clutter the panel.
_HIDDEN = re.compile(r"^(loop|ram|zram|fd|sr)\d*")
_VIRTUAL = re.compile(r"^(vd|xvd)[a-z]+$")

CountersSource = Callable[[], Mapping[str, Any]]
SECTOR_BYTES = 512  # /proc/diskstats counts 512-byte sectors whatever the device's own (psutil's DISK_SECTOR_SIZE)
HOLDERS_S = 30.0  # how often the md/dm devices built on each disk are listed again (holders/: a few stats a disk)
BUSY_WRAP = 2**32  # the kernel prints busy time as an unsigned int of ms (jiffies_to_msecs(io_ticks)): it wraps here


class DiskCounters(NamedTuple):
    read_bytes: int
    write_bytes: int
    read_count: int
    write_count: int
    busy_time: int


def parse_diskstats_line(fields: list[bytes]) -> DiskCounters:
    """The counters of one /proc/diskstats line, as psutil reads its three layouts (Linux 2.4's 15 fields, a
    disk's 14 or 18+, a partition's 7); ValueError for any other."""
    count = len(fields)
    if count == 15:
        reads = int(fields[2])
        _, rsect, _, writes, _, wsect, _, _, busy, _ = map(int, fields[4:14])
    elif count == 14 or count >= 18:
        reads, _, rsect, _, writes, _, wsect, _, _, busy, _ = map(int, fields[3:14])
    elif count == 7:
        reads, rsect, writes, wsect = map(int, fields[3:])
        busy = 0
    else:
        raise ValueError(f"/proc/diskstats: not sure how to read {b' '.join(fields)!r}")
    return DiskCounters(rsect * SECTOR_BYTES, wsect * SECTOR_BYTES, reads, writes, busy)


class DiskStats:
    """The disks asked for, their counters as `proc`/diskstats has them now: psutil.disk_io_counters(perdisk=True,
    nowrap=False)'s figures for that file, without its record per device each tick. No state: a wrap or a reset is
    the rate meter's to judge (DiskProbe). A line it cannot read leaves its disk out (N/A): sysfs.proc_lines' rule."""

    def __init__(self, proc: str, names: Callable[[], list[str]]) -> None:
        self._proc = proc
        self._names = names  # asked at the first read (DiskProbe lists the disks then, once)
        self._wanted: dict[bytes, str] | None = None  # each one's name as the file writes it

    def __call__(self) -> Mapping[str, Any]:
        wanted = self._wanted
        if wanted is None:
            wanted = self._wanted = {os.fsencode(name): name for name in self._names()}
        out: dict[str, DiskCounters] = {}
        for line in proc_lines(self._proc, "diskstats"):
            fields = line.split()
            name = wanted.get(fields[3] if len(fields) == 15 else fields[2] if len(fields) > 2 else b"")
            if name is not None:
                try:
                    out[name] = parse_diskstats_line(fields)
                except ValueError:
                    continue
        return out


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


def holder_of(name: str, root: str = "/") -> str | None:
    """The md/dm device built on the disk `name` or on one of its partitions (the first by name), or None: what
    /sys/block/NAME/holders and each partition's holders/ list."""
    base = os.path.join(root, "sys/block", name)
    try:
        entries = os.listdir(base)
    except OSError:
        return None
    held: list[str] = []
    for entry in ("", *entries):
        if entry and not os.path.exists(os.path.join(base, entry, "partition")):
            continue
        with contextlib.suppress(OSError):
            held.extend(os.listdir(os.path.join(base, entry, "holders")))
    return min(held, default=None)


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
        self._counters = counters or DiskStats(os.path.join(root, "proc"), self._disks)
        self._clock = clock or time.monotonic
        self._rates = RateMeter()  # 64-bit counters: one that goes back was reset, a gap
        self._busy = RateMeter(wrap_at=BUSY_WRAP)
        self._kinds: dict[str, DiskKind] = {}  # each disk's kind, read once
        self._holders: dict[str, str | None] = {}  # each disk's md/dm holder, read again every HOLDERS_S
        self._holders_at: float | None = None
        self._names: list[str] | None = None

    def _disks(self) -> list[str]:
        if self._names is None:
            self._names = whole_disks(self.root)
        return self._names

    def read(self) -> tuple[DiskSnapshot, ...]:
        names = self._disks()
        now = self._clock()
        counters = self._counters()
        if self._holders_at is None or now - self._holders_at >= HOLDERS_S:  # an array assembled since, LVM, dm-crypt
            self._holders = {name: holder_of(name, self.root) for name in names}
            self._holders_at = now
        disks = []
        for name in names:
            counter = counters.get(name)
            if counter is None:
                continue
            kind = self._kinds.get(name)
            if kind is None:
                kind = self._kinds[name] = disk_kind(name, self.root)
            busy_ms = self._busy.rate(name, float(getattr(counter, "busy_time", 0)), now)
            disks.append(DiskSnapshot(
                name=name,
                kind=kind,
                read_bytes_per_s=self._rates.rate((name, "rb"), float(counter.read_bytes), now),
                write_bytes_per_s=self._rates.rate((name, "wb"), float(counter.write_bytes), now),
                read_iops=self._rates.rate((name, "rc"), float(counter.read_count), now),
                write_iops=self._rates.rate((name, "wc"), float(counter.write_count), now),
                busy_percent=None if busy_ms is None else min(100.0, busy_ms / 10.0),
                held_by=self._holders.get(name),
            ))
        return tuple(disks)
