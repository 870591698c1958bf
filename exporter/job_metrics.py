"""The focused job's ranks as Prometheus series (`hwtop export --pid/--job`), for `hwtop fleet --job` to judge a
job across hosts. Counters, so Prometheus' rate() gives any window's shares and a restarted exporter is a reset,
not a jump.

Labels are bounded: `phase` takes only the stack categories (probes/stack_classify.py), `rank` the job's own
ranks (at most MAX_RANKS), and `job_name` and `Hostname` one value each per exporter; `hwtop_job_rank_info` has
one series per rank at a time (its site changes as the job moves on: the old one goes stale). The job's label is
`job_name`, not `job`: Prometheus gives every scraped series its target's `job` label and would rename ours to
`exported_job`. The host label is `Hostname`, as on every other hwtop and dcgm-exporter series, so a rank joins
its host's findings and GPUs on one label. Both values are untrusted text; the writer escapes them."""

from __future__ import annotations

from collections.abc import Iterator

from hwtop.exporter.text import Family
from hwtop.model.job import JobSnapshot
from hwtop.model.verdict import STATES, Verdicts
from hwtop.probes.stack_classify import CATEGORIES

MAX_RANKS = 4096  # ranks of one job on one host: far above any real node
MAX_SITE = 200  # a site is `file:line function`; a longer one is cut (its value changes as the job moves on)
RANK_LABELS = ("job_name", "rank", "Hostname")


def job_families(job: JobSnapshot | None, job_name: str, host: str,
                 verdicts: Verdicts | None = None) -> Iterator[Family]:
    """Nothing when no job is focused: the families exist only on an exporter started with --pid/--job.
    `verdicts`: the frame's (Frame.verdicts, the very answer the rules read this tick, as the job view shows it);
    without (a caller with a snapshot and no frame), see verdict_families."""
    if job is None:
        return
    info = Family("hwtop_job_info", "1 while hwtop export watches this job (status: running or ended)",
                  ("job_name", "Hostname", "status"))
    info.add((job_name, host, job.status), 1)
    yield info
    seconds = Family("hwtop_job_rank_seconds_total",
                     "Seconds of each rank's main thread per phase since hwtop began watching, from py-spy samples "
                     "(phase: " + ", ".join(CATEGORIES) + ")", (*RANK_LABELS, "phase"), "counter")
    steps = Family("hwtop_job_rank_steps_total", "Optimizer steps of each rank, where the job reports them",
                   RANK_LABELS, "counter")
    seen = Family("hwtop_job_rank_last_seen_timestamp_seconds",
                  "Unix time each rank's figures were last updated: one that stops while others advance has stopped",
                  RANK_LABELS)
    about = Family("hwtop_job_rank_info", "1 for each rank: its pid, local rank, GPU and commonest own-code site "
                   "outside waits (file:line function), where known",
                   (*RANK_LABELS, "pid", "local_rank", "gpu", "site"))
    # this host's ranks: another host's, known from NCCL alone, are that host's exporter's to report
    ranks = sorted((r for r in job.ranks if not r.nccl_only), key=lambda r: r.rank)[:MAX_RANKS]
    for rank in ranks:
        labels = (job_name, str(rank.rank), host)
        about.add((*labels, _text(rank.pid), _text(rank.local_rank), _text(rank.gpu), (rank.site or "")[:MAX_SITE]), 1)
        for phase, value in rank.phase_seconds:
            if phase in CATEGORIES:
                seconds.add((*labels, phase), value)
        if rank.steps is not None:
            steps.add(labels, rank.steps)
        if rank.seen_at is not None:
            seen.add(labels, rank.seen_at)
    yield seconds
    yield steps
    yield seen
    yield about
    yield from verdict_families(job, job_name, host, verdicts)
    yield from nccl_families(job, job_name)


def verdict_families(job: JobSnapshot, job_name: str, host: str, verdicts: Verdicts | None) -> Iterator[Family]:
    """Each of this host's ranks in its verdict's state, one series per rank at a time (a rank whose state changes
    moves to another series; the old one goes stale), and what the verdict names: the collective, where in the
    code, and whether it is the cause (`blamed`) or held back by one. `verdicts`: the frame's, as the rules read
    them. Only where none is given (a snapshot with no frame behind it, or a frame without verdicts: a replay of
    recorded findings) are the ranks judged here, from this snapshot alone with no earlier look and the default
    thresholds: that fallback can say otherwise than the rules (a hang NCCL's unchanged counts show needs two
    looks), so an exporter with a frame always passes its verdicts."""
    if verdicts is None:
        from hwtop.advice.ranks import Look, judge
        from hwtop.advice.thresholds import Thresholds

        verdicts = judge(Look(job.ranks), None, Thresholds())
    state = Family("hwtop_job_rank_state", "1 for each rank in its verdict's state (state: " + ", ".join(STATES) +
                   "): before-collective never launched the collective its peers launched, inside-collective "
                   "launched one and never finished it", (*RANK_LABELS, "state"))
    about = Family("hwtop_job_rank_verdict_info", "1 for each rank: its verdict's collective and site where it "
                   "names them, and whether it names the rank as the cause (blamed) or held back by one",
                   (*RANK_LABELS, "state", "blamed", "collective", "site"))
    here = {r.rank for r in job.ranks if not r.nccl_only}
    for v in sorted(verdicts.ranks, key=lambda v: v.rank)[:MAX_RANKS]:
        if v.rank not in here or v.state not in STATES:
            continue
        labels = (job_name, str(v.rank), host)
        state.add((*labels, v.state), 1)
        about.add((*labels, v.state, "true" if v.blamed else "false", (v.collective or "")[:MAX_SITE],
                   (v.site or "")[:MAX_SITE]), 1)
    yield state
    yield about


NCCL_OPS_KEPT = 8  # NCCL has five collective kinds today (Broadcast, Reduce, AllGather, ReduceScatter, AllReduce)
NCCL_STATES = ("RUNNING", "INIT", "FINALIZE", "ABORT", "ERROR", "NOCOMM", "UNRESPONSIVE", "DEAD")


def nccl_families(job: JobSnapshot, job_name: str) -> Iterator[Family]:
    """What NCCL's RAS says of every rank of the job, on every node. `Hostname` is the rank's own host
    as NCCL names it (its address), so the same rank read by the exporters of two nodes is one series apart from
    `instance`. Absent when the job's RAS was never read."""
    if job.nccl is not None and job.nccl.polled is not None:  # whether hwtop polls this job's RAS
        polled = Family("hwtop_nccl_ras_polled", "1 while hwtop sends NCCL RAS STATUS to the job every interval, 0 "
                        "while it asks only once the job stops (a release whose STATUS can crash the job, text-only "
                        "or unknown)", ("job_name", "nccl_version"))
        polled.add((job_name, job.nccl.nccl_version or ""), float(job.nccl.polled))
        yield polled
    if job.nccl is None or not any(r.nccl_state is not None for r in job.ranks):
        return
    counts = Family("hwtop_nccl_rank_collectives_total",
                    "Collectives each rank has launched, per operation, as NCCL's RAS reports them", (
                        *RANK_LABELS, "op"), "counter")
    state = Family("hwtop_nccl_rank_state",
                   "1 for each rank in its NCCL state (" + ", ".join(NCCL_STATES) + "): UNRESPONSIVE and DEAD are "
                   "ranks NCCL's RAS cannot reach or has given up on", (*RANK_LABELS, "state", "pid", "gpu"))
    lag = Family("hwtop_nccl_rank_lag", "Collectives each rank has launched behind the most advanced rank of the "
                 "communicator judged as the job's (the one whose counts move), summed over operations", RANK_LABELS)
    missing = Family("hwtop_nccl_missing_ranks", "Ranks of the job's communicators NCCL's RAS cannot reach (state: "
                     "UNRESPONSIVE or DEAD)", ("job_name", "state"))
    tally = {"UNRESPONSIVE": 0, "DEAD": 0}
    ops: set[str] = set()
    for rank in sorted(job.ranks, key=lambda r: r.rank)[:MAX_RANKS]:
        if rank.nccl_state is None:
            continue
        labels = (job_name, str(rank.rank), rank.host)
        name = rank.nccl_state if rank.nccl_state in NCCL_STATES else "ERROR"
        state.add((*labels, name, _text(rank.pid), _text(rank.gpu)), 1)
        if name in tally:
            tally[name] += 1
        if rank.lag is not None:
            lag.add(labels, rank.lag)
        for op, value in rank.collectives:
            if op in ops or len(ops) < NCCL_OPS_KEPT:
                ops.add(op)
                counts.add((*labels, op), value)
    for name, value in tally.items():
        missing.add((job_name, name), value)
    yield counts
    yield state
    yield lag
    yield missing


def _text(value: int | None) -> str:
    return "" if value is None else str(value)
