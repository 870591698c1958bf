"""Host identity and uptime."""

from __future__ import annotations

import os

from hwtop.model.snapshot import HostInfo
from hwtop.probes.sysfs import read_text


def read_host(root: str = "/") -> HostInfo:
    uname = os.uname()
    uptime: float | None = None
    text = read_text(root, "proc/uptime")
    if text:
        try:
            uptime = float(text.split()[0])
        except (ValueError, IndexError):
            uptime = None
    return HostInfo(hostname=uname.nodename, kernel=uname.release, uptime_s=uptime)
