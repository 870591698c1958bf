"""Numbers as the evidence lines print them (headless: no Rich, no widgets)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hwtop.probes.sysfs import format_cpulist

if TYPE_CHECKING:
    from hwtop.model.snapshot import Snapshot

LAUNCHERS = ("torchrun", "mpirun", "srun", "deepspeed", "accelerate")


def gib(value: float | None) -> str:
    return "N/A" if value is None else f"{value / (1 << 30):.1f} GiB"


def rate(value: float | None) -> str:
    if value is None:
        return "N/A"
    return f"{value / 1e9:.2f} GB/s" if value >= 1e9 else f"{value / 1e6:.0f} MB/s"


def percent(value: float | None) -> str:
    return "N/A" if value is None else f"{value:.0f}%"


def cpus(values: tuple[int, ...] | list[int]) -> str:
    return format_cpulist(sorted(values)) or "none"


def command(name: str, cmdline: str | None, width: int = 48) -> str:
    text = cmdline or name
    return text if len(text) <= width else text[: width - 1] + "…"


def job_name(snapshot: Snapshot) -> str:
    """What the evidence calls the job whose telemetry it reads: the launcher that started its ranks ("the torchrun
    job (pid 40990)", a demo's or a real one's), else hwtop's own ("the embedded job", started with w)."""
    workload = snapshot.workload
    by_pid = {p.pid: p for p in snapshot.processes}
    rank = by_pid.get(workload.pids[0]) if workload is not None and workload.pids else None
    launcher = by_pid.get(rank.ppid) if rank is not None and rank.ppid is not None else None
    if launcher is not None and launcher.name in LAUNCHERS:
        return f"the {launcher.name} job (pid {launcher.pid})"
    return "the embedded job"
