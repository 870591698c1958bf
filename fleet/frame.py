"""What the fleet's screens draw: one immutable FleetFrame a round, made on the fleet session's worker. The hosts
come worst first, with the figures of the summary line already counted, so the UI only swaps frames and draws."""

from __future__ import annotations

from hwtop.fleet.alerts import AlertList
from hwtop.fleet.job import JobView
from hwtop.fleet.jobs import JobList
from hwtop.fleet.model import HostView
from hwtop.model.record import Record


class Summary(Record, frozen=True):
    """The fleet in one line: hosts up and down, GPUs, GPUs idle, findings by rule (most hosts first)."""

    hosts: int = 0
    up: int = 0
    gpus: int = 0
    idle_gpus: int = 0  # answering, at or below the busy threshold (gpu_busy_util_percent)
    used_mib: float = 0.0
    total_mib: float = 0.0
    util_mean: float | None = None
    findings: tuple[tuple[str, int], ...] = ()  # (rule, hosts that have it)

    @property
    def down(self) -> int:
        return self.hosts - self.up


class FleetFrame(Record, frozen=True):
    """`problem`: what is wrong with the source itself (Prometheus not answering, a partial answer), or None.
    `stale_s`: when the last round failed, how old the hosts shown are (None: they are this round's)."""

    seq: int
    description: str
    interval: float
    hosts: tuple[HostView, ...]
    summary: Summary
    problem: str | None = None
    stale_s: float | None = None
    warnings: tuple[str, ...] = ()  # every warning so far, each once, oldest first
    job: JobView | None = None  # the ranks of the job asked for, as of the round that asked
    jobs: JobList | None = None  # the job list, while asked for
    round_s: float = 0.0  # how long the round took to read and assemble
    alerts: AlertList | None = None  # Prometheus's alerts, firing first (None: a source without them)
