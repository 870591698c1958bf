"""NCCL's own view of a focused job (its RAS service, issue 42): a rank whose process RAS cannot reach or has
given up on, NCCL errors and aborts by NCCL's names, and a job whose ranks all stopped launching collectives.
A hung rank is collective-hang's and a routinely late one rank-straggler's (advice/rules/collective.py,
straggler.py): one finding for one cause, whichever figures saw it first."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

from hwtop.advice.job_facts import running_job
from hwtop.advice.registry import rule
from hwtop.advice.thresholds import Thresholds
from hwtop.advice.window import Window
from hwtop.model.finding import Finding

if TYPE_CHECKING:  # a monitor with no focused job loads neither
    from hwtop.model.job import JobSnapshot


LOST_FIXES = (
    "On that host: is the process alive (ps -p PID), stopped (state T), or stuck in the kernel (state D)? "
    "dmesg and the job's log say why a rank died (OOM killer, Xid, segfault).",
    "The other ranks wait for it until their collective times out: set init_process_group(timeout=...) and "
    "TORCH_NCCL_ASYNC_ERROR_HANDLING=1 so the job fails and restarts instead of hanging; torchrun "
    "--max-restarts restarts it.",
)
ERROR_FIXES = (
    "NCCL_DEBUG=INFO (NCCL_DEBUG_SUBSYS=INIT,NET) in the job's environment prints the cause next to the error.",
    "ncclRemoteError: a peer failed or the network dropped (check that rank's host and its links); "
    "ncclSystemError: a socket or the IB stack (ulimit -l, NCCL_SOCKET_IFNAME); ncclUnhandledCudaError: a CUDA "
    "error on that GPU (Xid in dmesg).",
)
STOPPED_FIXES = (
    "A checkpoint or an evaluation launches no collective for a while: expected if it ends.",
    "If every rank sits in the same collective (py-spy dump: all_reduce/barrier) the collective itself is not "
    "completing: the network or a GPU; NCCL_DEBUG=INFO and TORCH_NCCL_DUMP_ON_TIMEOUT=1 say which.",
)


def _job(window: Window) -> JobSnapshot | None:
    job = running_job(window)
    return job if job is not None and job.nccl is not None and job.nccl.comms else None


def _local_pids(job: JobSnapshot) -> set[int]:
    return {p.pid for p in job.processes if p.alive}


def _since(at: float | None) -> str:
    return "" if at is None else f" since {time.strftime('%H:%M:%S', time.localtime(at))}"


@rule("nccl-rank-lost", severity="critical", hold_s=0.0, clear_s=30.0,
      watches="ranks NCCL's RAS cannot reach or considers dead", reads=())
def nccl_rank_lost(window: Window, t: Thresholds) -> Iterator[Finding]:
    job = _job(window)
    if job is None or job.nccl is None:
        return
    from hwtop.advice.nccl_ranks import missing, who

    lost = missing(job.nccl)
    if not lost:
        return
    dead = [r for _, r, _ in lost if r.dead]
    evidence = []
    for nc, r, at in lost[:8]:
        state = "considered dead by NCCL (unreachable for 60 s)" if r.dead else "not answering NCCL's RAS"
        evidence.append(f"{who(r)}: {state}{_since(at)}, missing from communicator {nc.comm.hash} of "
                        f"{nc.comm.size} ranks")
    if len(lost) > 8:
        evidence.append(f"and {len(lost) - 8} more")
    first = lost[0][1]
    title = (f"NCCL considers {who(first)} dead" if dead and len(lost) == 1 else
             f"{len(dead)} of the job's ranks are dead to NCCL" if dead else
             f"NCCL cannot reach {who(first)}" if len(lost) == 1 else f"NCCL cannot reach {len(lost)} ranks")
    local = _local_pids(job)
    yield nccl_rank_lost.finding(
        "critical" if dead else "warning", title, tuple(evidence), LOST_FIXES,
        scope="job", pids=tuple(sorted({r.pid for _, r, _ in lost if r.pid in local and r.pid})),
        measure=float(len(lost)))


@rule("nccl-error", severity="critical", hold_s=0.0, clear_s=30.0,
      watches="NCCL's initialisation and asynchronous errors, aborts", reads=())
def nccl_error(window: Window, t: Thresholds) -> Iterator[Finding]:
    job = _job(window)
    if job is None or job.nccl is None:
        return
    from hwtop.advice.nccl_ranks import errors, who

    found = errors(job.nccl)
    if not found:
        return
    evidence = [f"{who(r)}: {what}" for r, what in found[:8]]
    if len(found) > 8:
        evidence.append(f"and {len(found) - 8} more ranks")
    local = _local_pids(job)
    yield nccl_error.finding("critical", f"NCCL reports an error on {who(found[0][0])}" if len(found) == 1 else
                             f"NCCL reports errors on {len(found)} ranks", tuple(evidence), ERROR_FIXES, scope="job",
                             pids=tuple(sorted({r.pid for r, _ in found if r.pid in local and r.pid})))


@rule("nccl-stopped", severity="info", hold_s=0.0, clear_s=20.0,
      watches="collectives launched by every rank, from NCCL's RAS", reads=("ras_stopped_s",))
def nccl_stopped(window: Window, t: Thresholds) -> Iterator[Finding]:
    job = _job(window)
    if job is None or job.nccl is None:
        return
    from hwtop.advice.nccl_ranks import stopped

    found = stopped(job.nccl, t)
    if found is None:
        return
    nc, still = found
    from hwtop.probes.stack_classify import LABELS

    evidence = [f"all {nc.comm.size} ranks of communicator {nc.comm.hash} have launched the same collectives and "
                f"none for {still:.0f} s ({nc.queries} queries; limit {t['ras_stopped_s']:.0f} s)"]
    for rank in job.ranks:
        if rank.samples and not rank.nccl_only:
            phase, share = max(rank.shares, key=lambda kv: kv[1], default=("", 0.0))
            evidence.append(f"this host's rank {rank.rank} (pid {rank.pid}): {LABELS.get(phase, phase)} "
                            f"{100 * share:.0f}% of its samples" + (f" at {rank.site}" if rank.site else ""))
    yield nccl_stopped.finding("info", "No rank has launched a collective for a while", tuple(evidence),
                               STOPPED_FIXES, scope="job", measure=still)
