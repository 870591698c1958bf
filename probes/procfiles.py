"""The costlier per-process /proc files of a job, each read on its own schedule by probes/job.py: PSS from
smaps_rollup, NUMA placement from numa_maps, the disks under the files it has open."""

from __future__ import annotations

import os
import re

MAX_FDS = 2048


def read_bytes(path: str, limit: int | None = None) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        total = 0
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            total += len(chunk)
            if limit is not None and total >= limit:
                return b"".join(chunks)
    finally:
        os.close(fd)


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


def open_file_devices(base: str, root: str = "/", limit: int = MAX_FDS) -> dict[str, int] | None:
    """Disks holding the regular files the process has open (its dataset, checkpoints): {disk: files}.
    None when its fd directory cannot be read."""
    from hwtop.probes.disks import device_for_path

    counts: dict[str, int] = {}
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
        device = device_for_path(target, root) or "unknown"
        counts[device] = counts.get(device, 0) + 1
    return counts
