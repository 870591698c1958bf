"""Host identity and uptime."""

from __future__ import annotations

import os

from hwtop.model.snapshot import HostInfo
from hwtop.probes.sysfs import parse_uptime, read_text


def read_host(root: str = "/") -> HostInfo:
    uname = os.uname()
    text = read_text(root, "proc/uptime")
    uptime = parse_uptime(text) if text else None
    return HostInfo(hostname=uname.nodename, kernel=uname.release, uptime_s=uptime)
