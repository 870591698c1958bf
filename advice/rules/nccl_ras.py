"""NCCL's own view of a focused job (its RAS service): a rank whose process RAS cannot reach or has
given up on (in an answer, or at once from MONITOR's PEER_DEAD), NCCL errors and aborts by NCCL's names,
and a job whose ranks all stopped launching collectives. Another job's answer (NcclView.foreign) says nothing of
this one.
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
    from hwtop.model.ras import RasEvent


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


def _job(window: Window, events: bool = False) -> JobSnapshot | None:
    """The running job with an answer of its own (or, `events`, MONITOR's events) to judge."""
    job = running_job(window)
    if job is None or job.nccl is None or job.nccl.foreign:
        return None
    return job if job.nccl.comms or (events and job.nccl.events) else None


def _local_pids(job: JobSnapshot) -> set[int]:
    return {p.pid for p in job.processes if p.alive}


def _since(at: float | None) -> str:
    return "" if at is None else f" since {time.strftime('%H:%M:%S', time.localtime(at))}"


@rule("nccl-rank-lost", severity="critical", hold_s=0.0, clear_s=30.0,
      watches="ranks NCCL's RAS cannot reach or considers dead", reads=())
def nccl_rank_lost(window: Window, t: Thresholds) -> Iterator[Finding]:
    job = _job(window, events=True)
    if job is None or job.nccl is None:
        return
    from hwtop.advice.nccl_ranks import dead_peers, missing, who

    lost = missing(job.nccl)
    seen = {(r.host, r.pid) for _, r, _ in lost}
    announced = [e for e in dead_peers(job.nccl) if (e.host, e.pid) not in seen]
    if not lost and not announced:
        return
    dead = [r for _, r, _ in lost if r.dead]
    evidence = []
    for nc, r, at in lost[:8]:
        state = "considered dead by NCCL (unreachable for 60 s)" if r.dead else "not answering NCCL's RAS"
        evidence.append(f"{who(r)}: {state}{_since(at)}, missing from communicator {nc.comm.hash} of "
                        f"{nc.comm.size} ranks")
    evidence += [f"{_peer(e)}: declared dead by NCCL (MONITOR: PEER_DEAD at {e.at})" for e in announced[:8]]
    count = len(lost) + len(announced)
    if count > len(evidence):
        evidence.append(f"and {count - len(evidence)} more")
    title = _lost_title(who(lost[0][1]) if lost else _peer(announced[0]), count, len(dead) + len(announced))
    local = _local_pids(job)
    yield nccl_rank_lost.finding(
        "critical" if dead or announced else "warning", title, tuple(evidence), LOST_FIXES,
        scope="job", pids=tuple(sorted({r.pid for _, r, _ in lost if r.pid in local and r.pid})),
        measure=float(count))


def _peer(event: RasEvent) -> str:
    """A process MONITOR names: NCCL gives its host, pid and GPUs, not its ranks."""
    gpus = f", GPU {','.join(map(str, event.gpus))}" if event.gpus else ""
    return f"the process pid {event.pid} on {event.host}{gpus}" if event.pid is not None else \
        f"the process at {event.host}"


def _lost_title(first: str, count: int, dead: int) -> str:
    if dead and count == 1:
        return f"NCCL considers {first} dead"
    if dead:
        return f"{dead} of the job's ranks are dead to NCCL"
    return f"NCCL cannot reach {first}" if count == 1 else f"NCCL cannot reach {count} ranks"


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
                f"none for {still:.0f} s ({nc.queries} queries; limit {t['ras_stopped_s']:.0f} s)",
                "NCCL counts collectives launched, not completed: one stuck on the GPU leaves every count equal "
                "(NVIDIA/nccl#1730), and point-to-point, AlltoAll and CUDA-graph collectives are not counted"]
    for rank in job.ranks:
        if rank.samples and not rank.nccl_only:
            phase, share = max(rank.shares, key=lambda kv: kv[1], default=("", 0.0))
            evidence.append(f"this host's rank {rank.rank} (pid {rank.pid}): {LABELS.get(phase, phase)} "
                            f"{100 * share:.0f}% of its samples" + (f" at {rank.site}" if rank.site else ""))
    yield nccl_stopped.finding("info", "No rank has launched a collective for a while", tuple(evidence),
                               STOPPED_FIXES, scope="job", measure=still)
