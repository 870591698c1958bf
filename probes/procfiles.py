"""The costlier per-process /proc files of a job, each read on its own schedule by probes/job/figures.py: PSS from
smaps_rollup, NUMA placement from numa_maps, the disks under the files it has open."""

from __future__ import annotations

import os
import re

from hwtop.probes.sysfs import read_bytes

MAX_FDS = 2048


def parse_pss(text: str) -> int | None:
    """Bytes of the `Pss:` line of /proc/PID/smaps_rollup (kB there)."""
    for line in text.splitlines():
        if line.startswith("Pss:"):
            parts = line.split()
            if len(parts) >= 2 and parts[1].isdigit():
                return int(parts[1]) * 1024
    return None


def parse_numa_maps(text: str) -> dict[int, int]:
    """Pages per node summed over every mapping: the N<node>=<pages> tokens of /proc/PID/numa_maps."""
    pages: dict[int, int] = {}
    for match in re.finditer(r"\bN(\d+)=(\d+)", text):
        node = int(match.group(1))
        pages[node] = pages.get(node, 0) + int(match.group(2))
    return pages


# Filesystems whose files come over the network: a DataLoader reading from one waits on the network, not a disk.
NETWORK_FILESYSTEMS = frozenset({"nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "ceph", "glusterfs", "lustre", "gpfs",
                                 "beegfs", "afs", "fuse"})


def network_filesystem(device: str) -> str | None:
    """The filesystem type of an open_file_devices name that is a network mount ("nfs4 fs1:/data" → "nfs4")."""
    fstype = device.partition(" ")[0]
    return fstype if fstype in NETWORK_FILESYSTEMS or fstype.startswith("fuse.") else None


def parse_mountinfo(text: str) -> dict[str, tuple[str, str]]:
    """major:minor → (filesystem type, source) of each mount in /proc/PID/mountinfo (the first of bind mounts)."""
    mounts: dict[str, tuple[str, str]] = {}
    for line in text.splitlines():
        head, sep, tail = line.partition(" - ")
        fields, rest = head.split(), tail.split()
        if sep and len(fields) >= 3 and len(rest) >= 2:
            mounts.setdefault(fields[2], (rest[0], rest[1]))
    return mounts


def open_file_devices(base: str, root: str = "/", limit: int = MAX_FDS) -> dict[str, int] | None:
    """Disks holding the regular files the process has open (its dataset, checkpoints): {disk: files}; a file on
    a network mount (NFS, CIFS, FUSE, ...) counts under "FSTYPE SOURCE" ("nfs4 fs1:/datasets"), from the process's
    own mountinfo. None when its fd directory cannot be read."""
    from hwtop.probes.disks import device_for_path

    counts: dict[str, int] = {}
    mounts: dict[str, tuple[str, str]] | None = None
    try:
        fds = os.listdir(f"{base}/fd")[:limit]
    except OSError:
        return None
    for fd in fds:
        try:
            target = os.readlink(f"{base}/fd/{fd}")
        except OSError:
            continue
        if not target.startswith("/") or target.startswith(("/proc", "/sys", "/dev")) or target.endswith(" (deleted)"):
            continue
        try:
            if not os.path.isfile(target):
                continue
        except OSError:
            continue
        device = device_for_path(target, root)
        if device is None:  # no block device: tmpfs, overlay, or a network filesystem
            if mounts is None:
                try:
                    mounts = parse_mountinfo(read_bytes(f"{base}/mountinfo", limit=1 << 20).decode(errors="replace"))
                except OSError:
                    mounts = {}
            device = _network_mount(target, mounts) or "unknown"
        counts[device] = counts.get(device, 0) + 1
    return counts


def _network_mount(path: str, mounts: dict[str, tuple[str, str]]) -> str | None:
    try:
        st_dev = os.stat(path).st_dev
    except OSError:
        return None
    fstype, source = mounts.get(f"{os.major(st_dev)}:{os.minor(st_dev)}", ("", ""))
    name = f"{fstype} {source}"
    return name if network_filesystem(name) else None
