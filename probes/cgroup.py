"""The cgroups a process runs in: where its memory limit and CPU quota are, as a container, Slurm or systemd
set them. A job "out of memory" inside a 16 GiB cgroup on a 1 TiB box is out of memory all the same."""

from __future__ import annotations

import os
from dataclasses import dataclass

from hwtop.model.job import CgroupMemory

NO_LIMIT = 1 << 60  # cgroup v1 writes "no limit" as a page-rounded 2^63 - 1


@dataclass(frozen=True, slots=True)
class Cgroups:
    """Absolute directories of the process's cgroups (under `root`), None where that hierarchy is absent."""

    unified: str | None  # cgroup v2: pressure files, memory.max, cpu.max
    memory_v1: str | None
    cpu_v1: str | None


def parse_cgroup_file(text: str) -> dict[str, str]:
    """/proc/PID/cgroup → {controller: path}; the v2 hierarchy is under the key ""."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        for controller in parts[1].split(","):
            out[controller] = parts[2]
    return out


def cgroups_of(pid: int, root: str = "/") -> Cgroups | None:
    try:
        with open(os.path.join(root, f"proc/{pid}/cgroup"), encoding="utf-8", errors="replace") as handle:
            paths = parse_cgroup_file(handle.read())
    except OSError:
        return None
    mount = os.path.join(root, "sys/fs/cgroup")
    unified = None
    if paths.get("", "/") != "/":  # the root cgroup is the whole system: /proc/pressure says the same
        for base in (mount, os.path.join(mount, "unified")):  # pure v2, or v2 beside v1 (hybrid)
            if os.path.exists(os.path.join(base, "cgroup.controllers")):
                unified = os.path.normpath(base + "/" + paths[""].lstrip("/"))
                break
    memory = os.path.normpath(os.path.join(mount, "memory") + "/" + paths["memory"].lstrip("/")) \
        if "memory" in paths else None
    cpu = os.path.normpath(os.path.join(mount, "cpu") + "/" + paths["cpu"].lstrip("/")) if "cpu" in paths else None
    return Cgroups(unified, memory if memory and os.path.isdir(memory) else None,
                   cpu if cpu and os.path.isdir(cpu) else None)


def _number(path: str) -> int | None:
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            text = handle.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _stat_value(path: str, key: str) -> int | None:
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            for line in handle:
                name, _, value = line.partition(" ")
                if name == key and value.strip().isdigit():
                    return int(value)
    except OSError:
        pass
    return None


def memory_of(groups: Cgroups, root: str = "/") -> CgroupMemory | None:
    """Use and limit of the memory cgroup; the limit is the tightest of it and its parents. None when the
    hierarchy is not readable; limit None when nothing limits it."""
    top = os.path.join(root, "sys/fs/cgroup")
    if groups.unified is not None and os.path.exists(os.path.join(groups.unified, "memory.current")):
        used = _number(os.path.join(groups.unified, "memory.current"))
        limit = None
        directory = groups.unified
        while directory.startswith(top) and len(directory) > len(top):
            value = _number(os.path.join(directory, "memory.max"))  # "max" → None
            if value is not None:
                limit = value if limit is None else min(limit, value)
            directory = os.path.dirname(directory)
        if used is not None:  # memory.events counts its subtree's kills (cgroup-v2.rst)
            return CgroupMemory(groups.unified.removeprefix(root.rstrip("/")), used, limit,
                                _stat_value(os.path.join(groups.unified, "memory.events"), "oom_kill"))
    if groups.memory_v1 is not None:
        used = _number(os.path.join(groups.memory_v1, "memory.usage_in_bytes"))
        limit = _stat_value(os.path.join(groups.memory_v1, "memory.stat"), "hierarchical_memory_limit")
        if limit is None:
            limit = _number(os.path.join(groups.memory_v1, "memory.limit_in_bytes"))
        if used is not None:  # oom_control's oom_kill line: Linux 4.13 and later
            return CgroupMemory(groups.memory_v1.removeprefix(root.rstrip("/")), used,
                                None if limit is None or limit >= NO_LIMIT else limit,
                                _stat_value(os.path.join(groups.memory_v1, "memory.oom_control"), "oom_kill"))
    return None


def cpu_quota_cores(groups: Cgroups) -> float | None:
    """CPUs' worth of time the cgroup may use per second (cpu.max, or v1's CFS quota); None if unlimited."""
    if groups.unified is not None:
        try:
            with open(os.path.join(groups.unified, "cpu.max"), encoding="ascii") as handle:
                quota, _, period = handle.read().strip().partition(" ")
            if quota.isdigit() and period.isdigit() and int(period):
                return int(quota) / int(period)
        except OSError:
            pass
    if groups.cpu_v1 is not None:
        quota_text = None
        try:
            with open(os.path.join(groups.cpu_v1, "cpu.cfs_quota_us"), encoding="ascii") as handle:
                quota_text = handle.read().strip()
        except OSError:
            return None
        period = _number(os.path.join(groups.cpu_v1, "cpu.cfs_period_us"))
        if quota_text.isdigit() and period:
            return int(quota_text) / period
    return None
