"""The judgements a rule and a panel both make, with the thresholds in use (a config file's included): a panel
that marks a link, a rank's memory or a port calls the same function as the rule that raises the finding, so the
screen cannot contradict its own advice."""

from __future__ import annotations

from hwtop.advice.thresholds import Thresholds
from hwtop.model.snapshot import LinkState, NicSnapshot


def gpu_busy(util_percent: float | None, t: Thresholds) -> bool:
    """Doing real work: idle GPUs lower their clocks and link speed on purpose."""
    return util_percent is not None and util_percent >= t["gpu_busy_util_percent"]


def link_degraded(link: LinkState, util_percent: float | None, t: Thresholds) -> bool:
    """A link below its maximum gen or width while its GPU is busy (an idle GPU's slow link is power saving,
    ASPM or dynamic link speed, and is not flagged)."""
    return gpu_busy(util_percent, t) and link.below_max


def local_memory_share(numa_pages: tuple[tuple[int, int], ...] | None, home: int) -> float | None:
    """The share of a process's resident pages on node `home` (/proc/PID/numa_maps), None when none is known."""
    total = sum(count for _, count in numa_pages or ())
    return sum(count for node, count in numa_pages or () if node == home) / total if total else None


def memory_far(numa_pages: tuple[tuple[int, int], ...] | None, home: int, t: Thresholds) -> float | None:
    """The local share when too little of a process's memory is on its GPU's node, else None."""
    share = local_memory_share(numa_pages, home)
    return share if share is not None and share < t["numa_local_memory_share"] else None


def port_busy(nic: NicSnapshot, t: Thresholds) -> bool:
    """A port carrying more than an idle fabric's own traffic either way."""
    return max(nic.rx_bytes_per_s or 0.0, nic.tx_bytes_per_s or 0.0) >= t["network_idle_bytes_per_s"]
