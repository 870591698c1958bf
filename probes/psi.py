"""Pressure stall information (PSI): the share of wall time in which at least one task (`some`) or every task
(`full`) stalled waiting for CPU, I/O or memory. Read from the job's own cgroup where it has the files (cgroup
v2), else the system's /proc/pressure. Computed from the `total=` microsecond counters between two reads, so
a figure covers exactly the last tick rather than the kernel's decaying 10 s average."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from hwtop.model.job import Pressure

RESOURCES = ("cpu", "io", "memory")


def parse_pressure(text: str) -> dict[str, int]:
    """{"some": total µs, "full": total µs} from one pressure file; lines it cannot read are left out."""
    out = {}
    for line in text.splitlines():
        kind, _, rest = line.partition(" ")
        for token in rest.split():
            name, _, value = token.partition("=")
            if name == "total" and value.isdigit():
                out[kind] = int(value)
    return out


@dataclass(slots=True)
class PressureProbe:
    root: str = "/"
    clock: Callable[[], float] = time.monotonic
    _last: dict[tuple[str, str], tuple[float, int]] = field(default_factory=dict)

    def read(self, cgroup_dir: str | None) -> Pressure | None:
        """Pressure of the cgroup directory (absolute, under root) if it has the files, else the system's.
        None where the kernel has no PSI (before 4.20, or psi=0)."""
        base, source = os.path.join(self.root, "proc/pressure"), "system"
        if cgroup_dir and os.path.exists(os.path.join(cgroup_dir, "cpu.pressure")):
            base, source = cgroup_dir, "cgroup " + cgroup_dir.removeprefix(self.root.rstrip("/"))
        now = self.clock()
        values: dict[str, float | None] = {}
        found = False
        for resource in RESOURCES:
            name = f"{resource}.pressure" if source != "system" else resource
            try:
                with open(os.path.join(base, name), encoding="ascii", errors="replace") as handle:
                    totals = parse_pressure(handle.read())
            except OSError:
                totals = {}
            found = found or bool(totals)
            for kind in ("some", "full"):
                key = (f"{base}/{resource}", kind)
                total = totals.get(kind)
                before = self._last.get(key)
                values[f"{resource}_{kind}"] = None
                if total is None:
                    continue
                self._last[key] = (now, total)
                if before is not None and now > before[0] and total >= before[1]:
                    values[f"{resource}_{kind}"] = min(100.0, (total - before[1]) / 1e4 / (now - before[0]))
        if not found:
            return None
        return Pressure(source, values["cpu_some"], values["io_some"], values["io_full"], values["memory_some"],
                        values["memory_full"])
