"""The CPU's model name and cache sizes as the kernel states them (/proc/cpuinfo, sysfs cache directories).

Chosen over py-cpuinfo for the monitor: `cpuinfo.get_cpu_info()` runs a Python subprocess that costs seconds of
CPU (benchmarks/README.md), on the very host being watched, and on a VM it reported an L3 of 1 MiB where the
kernel (and lscpu) say 32 MiB. py-cpuinfo stays the fallback for what the kernel does not state (e.g. a model
name on some ARM kernels)."""

from __future__ import annotations

import os
import re

from hwtop.probes.sysfs import read_text

_SIZE = re.compile(r"^(\d+)\s*([KMG]?)$")
_UNIT = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
CPU_DIRECTORY = "sys/devices/system/cpu"
MODEL_KEYS = ("model name", "Model Name", "cpu model")  # x86, some ARM kernels, MIPS/others


def parse_cache_size(text: str) -> int | None:
    """A sysfs cache `size` ("32K", "1024K", "2M") in bytes; None when malformed."""
    match = _SIZE.match(text.strip())
    if match is None:
        return None
    return int(match.group(1)) * _UNIT[match.group(2)] or None


def cache_totals(root: str = "/") -> dict[int, int]:
    """Bytes of data (or unified) cache per level over the whole machine, each instance counted once, as lscpu
    sums them: instances are told apart by the CPUs that share them."""
    base = os.path.join(root, CPU_DIRECTORY)
    try:
        cpus = [name for name in os.listdir(base) if name.startswith("cpu") and name[3:].isdigit()]
    except OSError:
        return {}
    seen: set[tuple[int, str]] = set()
    totals: dict[int, int] = {}
    for cpu in cpus:
        caches = f"{CPU_DIRECTORY}/{cpu}/cache"
        try:
            indexes = [name for name in os.listdir(os.path.join(root, caches)) if name.startswith("index")]
        except OSError:
            continue
        for index in indexes:
            level, kind, size, shared = (read_text(root, f"{caches}/{index}/{name}")
                                         for name in ("level", "type", "size", "shared_cpu_list"))
            if level is None or kind is None or size is None or kind.strip() == "Instruction":
                continue
            try:
                number = int(level)
            except ValueError:
                continue
            instance = (number, shared.strip() if shared is not None else cpu)
            bytes_ = parse_cache_size(size)
            if bytes_ is None or instance in seen:
                continue
            seen.add(instance)
            totals[number] = totals.get(number, 0) + bytes_
    return totals


def cpu_model(root: str = "/", limit: int = 1 << 16) -> str | None:
    """The first model line of /proc/cpuinfo (read no further than `limit` bytes: it repeats per CPU)."""
    try:
        with open(os.path.join(root, "proc/cpuinfo"), encoding="utf-8", errors="replace") as handle:
            text = handle.read(limit)
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in MODEL_KEYS and value.strip():
            return value.strip()
    return None
