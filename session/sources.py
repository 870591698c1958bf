"""What a live session reads, fixed when it is made: the machine (this one or a demo), its GPUs or none, the job to
focus and how NCCL's RAS service is asked about it. A command turns its options into one SourceConfig, and
cli/machine.py's open_sampler builds the Sampler from it: the monitor, doctor and export the same way. What
changes afterwards (the focused job, the workload, the topology) is a command sent through the Session's
controls (session/controls.py), applied under the tick's lock; nothing sets a sampler's attributes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hwtop.probes.nccl_ras.manners import DEFAULT_INTERVAL_S

if TYPE_CHECKING:
    from hwtop.probes.job import JobProbe
    from hwtop.probes.nccl_ras.client import Address


class JobRefused(ValueError):
    """The job to focus cannot be watched (no such process, no match, not Python, not permitted): one line."""


@dataclass(frozen=True, slots=True)
class NcclRas:
    """Where and how often the focused job's NCCL RAS service is asked (--nccl-ras, --nccl-ras-interval,
    --nccl-ras-poll)."""

    address: Address | None = None  # None: the ranks' NCCL_RAS_ADDR, else localhost:28028
    interval_s: float = DEFAULT_INTERVAL_S
    poll: bool = False  # --nccl-ras-poll: STATUS every interval whatever the release (probes/nccl_ras/versions.py)


@dataclass(frozen=True, slots=True)
class JobTarget:
    """A running job to focus from the start (--pid, --job): these processes and their descendants, or those whose
    command line matches `pattern`; their ranks' stacks are sampled, as the user asked about this job."""

    roots: tuple[int, ...] = ()
    pattern: str | None = None
    host: str = ""  # the name its ranks carry (export's --hostname); empty: this machine's
    strict: bool = False  # doctor: a process that is not Python, or cannot be inspected, is refused too

    def open(self) -> JobProbe:
        """The job's probe, checked: JobRefused (its one line for the user) when it cannot be watched."""
        from hwtop.probes.job import JobError, JobProbe

        try:
            probe = JobProbe(roots=self.roots, pattern=self.pattern, sample_stacks=True, host=self.host)
            probe.check(strict=self.strict)
        except JobError as error:
            raise JobRefused(str(error)) from None
        return probe


@dataclass(frozen=True, slots=True)
class SourceConfig:
    """A live session's sources, as a command's options say them."""

    demo: str | None = None  # a demo machine (PROFILE[:VARIANT][:STORY], checked), else this one
    gpu: bool = True  # False: GPUs are not probed at all (--no-gpu)
    job: JobTarget | None = None
    nccl_ras: NcclRas = field(default_factory=NcclRas)
    workload_stacks: bool = False  # the embedded workload's ranks' stacks are sampled once it is focused (doctor)
