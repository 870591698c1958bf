"""What doctor reports besides its findings, as typed records built from the watch's last snapshot: the box, the
workload, the focused job (who is in it, where each rank's time went, what NCCL's RAS said). The records' fields
are in the order the JSON report gives them (render.as_json turns them into it)."""

from __future__ import annotations

import msgspec

from hwtop.model.finding import Change
from hwtop.model.job import JobSnapshot, RankFigures
from hwtop.model.ras import NcclComm, NcclView
from hwtop.model.snapshot import Snapshot
from hwtop.model.verdict import Verdict, Verdicts
from hwtop.model.workload import WorkloadState

STDERR_LINES = 8  # of a crashed workload's stderr, shown


class WorkloadFacts(msgspec.Struct, frozen=True):
    kind: str = msgspec.field(name="scenario")  # the embedded job's kind (its --scenario option)
    status: str = ""
    exit_code: int | None = None
    stderr_tail: tuple[str, ...] = ()  # of a crashed one: its last lines, once its output was drained


class StackFacts(msgspec.Struct, frozen=True):
    """Where one rank's main thread spent its time, by the stack phases' labels."""

    pid: int
    rank: int | None
    samples: int
    window_s: float
    fractions: dict[str, float]
    data_loader: str | None = None
    message: str | None = None
    handover: float = 0.0
    main_cpu: float | None = None


class RankNccl(msgspec.Struct, frozen=True):
    """What NCCL's RAS says of one rank, where it was asked."""

    nccl_state: str
    lag: int | None
    collectives: dict[str, int]
    nccl_only: bool


class RankFacts(msgspec.Struct, frozen=True):
    """The ranks side by side: how much of its time each waits for the others, and where it is busy otherwise."""

    rank: int
    host: str
    pid: int | None
    local_rank: int | None = None
    gpu: int | None = None
    samples: int = 0
    collective: float = 0.0
    steps: int | None = None
    shares: dict[str, float] = {}
    phase_seconds: dict[str, float] = {}
    site: str | None = None
    nccl: RankNccl | None = None  # in the JSON, its fields beside the others (none where NCCL was not asked)
    state: str | None = None  # its verdict's state (model/verdict.py STATES), as the rules and the job view have it
    verdict: str | None = None  # the verdict's words: "rank 5 (pid 41005 on node-0, GPU 5) never launched ..."
    blamed: bool = False  # the cause a finding names


class MissingRank(msgspec.Struct, frozen=True):
    rank: int
    host: str
    pid: int | None
    gpu: int | None
    dead: bool
    since: float | None


class CommFacts(msgspec.Struct, frozen=True):
    hash: str
    size: int
    queries: int
    unchanged_s: float
    window: int
    behind: dict[str, int]
    missing: tuple[MissingRank, ...]


class NcclFacts(msgspec.Struct, frozen=True):
    """Where hwtop asked NCCL's RAS, what it answered and what went wrong asking."""

    address: str
    source: str
    queries: int
    format: str | None
    nccl_version: str | None
    reply_bytes: int
    holding: str | None
    errors: tuple[str, ...]
    communicators: tuple[CommFacts, ...]


class JobFacts(msgspec.Struct, frozen=True):
    """The focused job in doctor's report: who is in it and where each rank's time went."""

    label: str
    roots: tuple[int, ...]
    status: str
    watched_s: float
    message: str | None = None
    processes: int = 0
    ranks: int = 0
    pids_seen: int = 0
    launcher: int | None = None
    exit_codes: dict[str, int] = {}
    workers_started_last_minute: int = 0
    workers_exited_last_minute: int = 0
    pss_bytes: int | None = None
    usable_cores: int | None = None
    stack_message: str | None = None
    stacks: tuple[StackFacts, ...] = ()
    rank_figures: tuple[RankFacts, ...] = ()
    nccl: NcclFacts | None = None
    nccl_env: dict[str, str] = {}  # what decides NCCL's transport, as the ranks' environment says
    world_size: int | None = None
    local_world_size: int | None = None
    nccl_watch_s: float | None = None  # the watch made longer for NCCL's RAS answers to tell a hang


class BoxFacts(msgspec.Struct, frozen=True):
    """The watch's last look at the box, the workload and the job; the advice's own troubles and story."""

    ticks: int
    workload: WorkloadFacts | None
    host: str | None
    gpus: int
    gpu_message: str | None
    rule_errors: dict[str, str]
    timeline: tuple[Change, ...]
    job: JobFacts | None = None
    fr_dump: tuple[str, ...] | None = None  # --fr-dump: a line per rank asked for its Flight Recorder dump, or why not


def workload_facts(state: WorkloadState | None, stderr_tail: tuple[str, ...] = ()) -> WorkloadFacts | None:
    """`stderr_tail`: a crashed job's last lines once drained (the state keeps three)."""
    if state is None:
        return None
    tail = stderr_tail[-STDERR_LINES:] if state.status == "crashed" and stderr_tail else state.stderr_tail
    return WorkloadFacts(state.kind, state.status, state.exit_code, tuple(tail))


def box_facts(ticks: int, snapshot: Snapshot, rule_errors: tuple[tuple[str, str], ...],
              timeline: tuple[Change, ...], job: JobFacts | None,
              workload: WorkloadFacts | None, fr_dump: tuple[str, ...] | None = None) -> BoxFacts:
    gpu_message = None if snapshot.gpus else (snapshot.gpu_system.message if snapshot.gpu_system else None)
    return BoxFacts(ticks, workload, snapshot.host.hostname if snapshot.host else None, len(snapshot.gpus),
                    gpu_message, dict(rule_errors), timeline, job, fr_dump)


def job_facts(job: JobSnapshot, watched_s: float, verdicts: Verdicts | None = None) -> JobFacts:
    """The focused job in doctor's report: who is in it, where each rank's time went and each rank's verdict
    (the frame's: the one the rules read), worst first as the job view orders them."""
    ranks = [p for p in job.processes if p.role.startswith("rank")]
    return JobFacts(
        label=job.label, roots=job.roots, status=job.status, watched_s=round(watched_s, 1), message=job.message,
        processes=sum(1 for p in job.processes if p.alive), ranks=len(ranks), pids_seen=job.pids_seen,
        launcher=next((p.pid for p in job.processes if p.role == "launcher"), None),
        exit_codes={str(p.pid): p.exit_code for p in job.processes if p.exit_code is not None},
        workers_started_last_minute=job.workers_started_last_minute,
        workers_exited_last_minute=job.workers_exited_last_minute,
        pss_bytes=job.pss_bytes, usable_cores=job.usable_cores, stack_message=job.stack_message,
        stacks=tuple(_stack_facts(job)), rank_figures=_ranks_facts(job, verdicts),
        nccl=nccl_facts(job.nccl),
        nccl_env=dict(sorted({k: v for p in ranks for k, v in p.nccl_env}.items())),
        world_size=next((p.world_size for p in ranks if p.world_size), None),
        local_world_size=next((p.local_world_size for p in ranks if p.local_world_size), None),
    )


def _stack_facts(job: JobSnapshot) -> list[StackFacts]:
    from hwtop.probes.stack_classify import LABELS

    return [StackFacts(s.pid, s.rank, s.samples, s.window_s,
                       {LABELS.get(name, name): round(value, 3) for name, value in s.fractions}, s.data_loader,
                       s.message, s.handover, s.main_cpu) for s in job.stacks]


def _ranks_facts(job: JobSnapshot, verdicts: Verdicts | None) -> tuple[RankFacts, ...]:
    if verdicts is None or not verdicts.ranks:
        return tuple(rank_facts(r) for r in job.ranks)
    from hwtop.advice.ranks import Look, worst_first

    return tuple(rank_facts(r, verdicts.of(r.rank, r.host)) for r in worst_first(Look(job.ranks), None, verdicts))


def rank_facts(rank: RankFigures, verdict: Verdict | None = None) -> RankFacts:
    from hwtop.probes.stack_classify import LABELS

    nccl = None
    if rank.nccl_state is not None:
        nccl = RankNccl(rank.nccl_state, rank.lag, dict(rank.collectives), rank.nccl_only)
    return RankFacts(rank.rank, rank.host, rank.pid, rank.local_rank, rank.gpu, rank.samples,
                     round(rank.collective_share, 3), rank.steps,
                     {LABELS.get(name, name): round(value, 3) for name, value in rank.shares},
                     {name: round(value, 1) for name, value in rank.phase_seconds}, rank.site, nccl,
                     verdict.state if verdict else None, verdict.sentence if verdict else None,
                     verdict.blamed if verdict else False)


def nccl_facts(view: NcclView | None) -> NcclFacts | None:
    """Where hwtop asked NCCL's RAS, what it answered and what went wrong asking."""
    if view is None:
        return None
    return NcclFacts(view.address, view.source, view.queries, view.format, view.nccl_version, view.reply_bytes,
                     view.holding, tuple(view.errors), tuple(_comm_facts(c) for c in view.comms))


def _comm_facts(comm: NcclComm) -> CommFacts:
    missing = tuple(MissingRank(r.rank, r.host, r.pid, r.nvml_dev, r.dead, comm.missing_from(r.rank))
                    for r in comm.comm.ranks if r.missing)
    return CommFacts(comm.comm.hash, comm.comm.size, comm.queries, round(comm.queried_at - comm.same_since, 1),
                     comm.window, {str(rank): n for rank, n in comm.behind}, missing)
