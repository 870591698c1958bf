"""Which local processes hold which /dev/nvidiaN open, from /proc/PID/fd. In a container NVML names host pids:
the processes that hold a GPU's device file are the ones here that use it. Both scans are cached for the slow
tier: a rank holds hundreds of fds, and which GPU files it has open does not change from one tick to the next."""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from hwtop.probes.nvml.session import SLOW_TIER_S

MAX_CACHED_PIDS = 4096  # beyond this, entries of long-gone pids are dropped


def nvidia_minors_held(proc_root: str, pid: int) -> set[int] | None:
    """The N of every /dev/nvidiaN the process holds open; None when its fds cannot be read."""
    try:
        fds = os.listdir(f"{proc_root}/{pid}/fd")
    except OSError:
        return None
    minors = set()
    for fd in fds:
        try:
            target = os.readlink(f"{proc_root}/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("/dev/nvidia") and target[11:].isdigit():
            minors.add(int(target[11:]))
    return minors


def scan_nvidia_holders(proc_root: str) -> dict[int, tuple[int, ...]]:
    holders: dict[int, list[int]] = {}
    try:
        pids = [int(n) for n in os.listdir(proc_root) if n.isdigit()]
    except OSError:
        return {}
    for pid in pids:
        for minor in nvidia_minors_held(proc_root, pid) or ():
            holders.setdefault(minor, []).append(pid)
    return {minor: tuple(sorted(p)) for minor, p in holders.items()}


def cmdline(proc_root: str, pid: int) -> str | None:
    try:
        with open(f"{proc_root}/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode("utf-8", "replace").strip() or None
    except OSError:
        return None


class Holders:
    """The two scans, cached for SLOW_TIER_S; one for every GPU of the probe."""

    def __init__(self, proc_root: str, clock: Callable[[], float] = time.monotonic) -> None:
        self.proc_root = proc_root
        self._clock = clock
        self._holders: dict[int, tuple[int, ...]] = {}  # /dev/nvidiaN minor -> local pids holding it
        self._holders_at = -1e9
        self._minors: dict[int, tuple[float, set[int] | None]] = {}

    def minors_held(self, pid: int) -> set[int] | None:
        """nvidia_minors_held of one pid."""
        now = self._clock()
        cached = self._minors.get(pid)
        if cached is None or now - cached[0] >= SLOW_TIER_S:
            cached = self._minors[pid] = (now, nvidia_minors_held(self.proc_root, pid))
            if len(self._minors) > MAX_CACHED_PIDS:
                for old in [k for k, (t, _) in self._minors.items() if now - t >= SLOW_TIER_S]:
                    del self._minors[old]
        return cached[1]

    def by_minor(self) -> dict[int, tuple[int, ...]]:
        """Which local pids hold which /dev/nvidiaN: a scan of every /proc/PID/fd."""
        now = self._clock()
        if now - self._holders_at >= SLOW_TIER_S:
            self._holders = scan_nvidia_holders(self.proc_root)
            self._holders_at = now
        return self._holders
