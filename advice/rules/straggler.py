"""rank-straggler: one rank holds the job back. In DDP every gradient all-reduce waits for the slowest rank, so
the others spend their time in collective waits while the slow one is busy elsewhere. Read from the per-rank
figures (JobSnapshot.ranks: stack shares, collective waits included, see probes/stack_waits.py), so it needs no
GPU and no code in the job; on GPUs, each rank's utilisation and power join as evidence. What the straggler does
instead picks the fix: its loader, its core shared, its GPU throttled or on a degraded link, its NUMA placement,
or more work than the others."""

from __future__ import annotations

from collections.abc import Iterator
from statistics import median
from typing import TYPE_CHECKING

import msgspec.structs

from hwtop.advice.job_facts import running_job
from hwtop.advice.judge import link_degraded
from hwtop.advice.rank_window import READS, window_verdicts
from hwtop.advice.registry import rule
from hwtop.advice.thresholds import Thresholds
from hwtop.advice.throttle import HARDWARE, POWER, THERMAL
from hwtop.advice.window import Window, gpu_numa_node
from hwtop.model.finding import Finding

if TYPE_CHECKING:
    from hwtop.model.job import JobProcess, JobSnapshot, RankFigures
    from hwtop.model.snapshot import GpuSnapshot, Snapshot

SAMPLING = ("sampling its stack…", "no Python samples yet")  # not yet read, not refused


def _label(rank: RankFigures) -> str:
    pid = f"pid {rank.pid}, " if rank.pid is not None else ""
    return f"rank {rank.rank} ({pid}host {rank.host})"


def _shares(rank: RankFigures, limit: int = 3) -> str:
    from hwtop.probes.stack_classify import LABELS

    parts = sorted(rank.shares, key=lambda kv: -kv[1])[:limit]
    return ", ".join(f"{LABELS.get(name, name)} {100 * value:.0f}%" for name, value in parts)


def missing_figures(job: JobSnapshot, t: Thresholds) -> list[str]:
    """Ranks whose stacks cannot be read (ptrace refused, py-spy missing): which figure is missing, and why."""
    why = {s.pid: s.message for s in job.stacks if s.message and s.message not in SAMPLING and not s.samples}
    out = []
    enough = t["stack_min_samples"]
    for rank in job.ranks:
        if rank.samples >= enough or rank.nccl_only:
            continue
        reason = why.get(rank.pid) if rank.pid is not None else None
        reason = reason or (job.stack_message if job.stack_message and not rank.samples else None)
        if reason:
            out.append(f"{_label(rank)}: no stack samples, so no collective-wait share: {reason}")
    return out


def _cause(snapshot: Snapshot, job: JobSnapshot, slow: RankFigures, others: list[RankFigures],
           t: Thresholds) -> tuple[list[str], list[str]]:
    """Evidence and the fix that fits what the straggler does instead of waiting."""
    process: JobProcess | None = next((p for p in job.processes if p.pid == slow.pid), None)
    evidence: list[str] = []
    fixes: list[str] = []
    if slow.share("data") >= t["data_wait_fraction"]:
        evidence.append(f"it waits for data {100 * slow.share('data'):.0f}% of its samples "
                        f"(limit {100 * t['data_wait_fraction']:.0f}%): its loader cannot keep up")
        fixes.append(f"Feed rank {slow.rank}: more DataLoader workers, cheaper samples, or its shard on faster "
                     "storage (see data-starved).")
    _queued(job, process, slow, others, t, evidence, fixes)
    gpu = next((g for g in snapshot.gpus if g.index == slow.gpu), None) if slow.gpu is not None else None
    if gpu is not None:
        _gpu_causes(snapshot, gpu, process, slow, t, evidence, fixes)
    if not fixes:
        site = f" at {slow.site}" if slow.site else ""
        fixes.append(f"Rank {slow.rank} does more work than the others{site}: balance the shards (equal samples "
                     "and sequence lengths per rank: DistributedSampler, length-bucketed batches), or move that "
                     "work out of the step.")
    return evidence, fixes


def _queued(job: JobSnapshot, process: JobProcess | None, slow: RankFigures, others: list[RankFigures],
            t: Thresholds, evidence: list[str], fixes: list[str]) -> None:
    """Its cores shared: it waits for a CPU, and twice as much as its peers do (on a box loaded by others every
    rank queues alike: measured 85-89% for both ranks at load 20 on 2 cores, which is no cause of this rank's)."""
    other_pids = {r.pid for r in others}  # made once, not once a process (255 ranks of a big job)
    peers = [p.run_wait_share for p in job.processes if p.run_wait_share is not None and p.pid in other_pids]
    queued = process.run_wait_share if process is not None else None
    if queued is None or queued < t["runqueue_wait_share"] or (peers and queued < 2 * median(peers)):
        return
    evidence.append(f"its threads wait for a CPU {100 * queued:.0f}% of their runnable time (limit "
                    f"{100 * t['runqueue_wait_share']:.0f}%" + (f", the others {100 * median(peers):.0f}%"
                                                               if peers else "") + "): its cores are shared")
    fixes.append(f"Give rank {slow.rank} cores of its own: pin each rank to disjoint CPUs (numactl or "
                 "taskset per local rank), set OMP_NUM_THREADS to cores ÷ ranks, move other work off its cores.")


def _gpu_causes(snapshot: Snapshot, gpu: GpuSnapshot, process: JobProcess | None, slow: RankFigures,
                t: Thresholds, evidence: list[str], fixes: list[str]) -> None:
    """Its GPU throttled, on a degraded link, or its memory far from the GPU's node."""
    reasons = sorted(set(gpu.throttle_reasons) & (THERMAL | POWER | HARDWARE))
    if reasons:
        clock = f", SM clock {gpu.sm_clock_mhz:.0f} MHz" if gpu.sm_clock_mhz is not None else ""
        evidence.append(f"its GPU{gpu.index} is throttled ({', '.join(reasons)}{clock})")
        fixes.append(f"GPU{gpu.index} is held back by its clocks: see gpu-throttled (cooling, power delivery); "
                     f"until then, move rank {slow.rank} off it.")
    link = gpu.pcie
    if link is not None and link_degraded(link, gpu.util_percent, t):
        evidence.append(f"its GPU{gpu.index} link is Gen{link.gen} x{link.width} of Gen{link.max_gen} "
                        f"x{link.max_width}")
        fixes.append(f"GPU{gpu.index}'s PCIe link trained below its maximum: see pcie-degraded (reseat, slot, BIOS).")
    home = gpu_numa_node(snapshot, gpu.index)
    if home is None or process is None or not process.numa_pages:
        return
    total = sum(count for _, count in process.numa_pages)
    local = sum(count for node, count in process.numa_pages if node == home)
    if total and local / total < t["numa_local_memory_share"]:
        evidence.append(f"{100 * (1 - local / total):.0f}% of its pages are off GPU{gpu.index}'s node {home}")
        fixes.append(f"Place rank {slow.rank} on node {home}: numactl --cpunodebind={home} --membind={home} "
                     "(see numa-misplaced).")


def _from_nccl(job: JobSnapshot, t: Thresholds) -> Finding | None:
    """The rank NCCL's RAS answers find behind in most queries while the others rarely are."""
    if job.nccl is None or not job.nccl.comms:
        return None
    from hwtop.advice.nccl_ranks import hang, straggler, who

    found = straggler(job.nccl, t)
    if found is None or hang(job.nccl, t) is not None:  # a hang is collective-hang's
        return None
    r = found.rank
    others = "no other rank more than once" if found.others_most <= 1 else \
        f"no other rank in more than {found.others_most}"
    evidence = (f"NCCL RAS: {who(r)} had launched fewer collectives than the most advanced rank in {found.behind} "
                f"of the last {found.window} queries; {others} (limits {100 * t['ras_straggler_share']:.0f}% and "
                f"{100 * t['ras_straggler_others_share']:.0f}% of the queries)",)
    local = {p.pid for p in job.processes if p.alive}
    here = r.pid in local
    fix = (f"py-spy dump --pid {r.pid} (in hwtop: j, the rank, then d) shows what it does between collectives."
           if here else f"On {r.host}: py-spy dump --pid {r.pid} shows what rank {r.rank} does between collectives.")
    return rank_straggler.finding(
        "warning", f"Rank {r.rank} holds the job back: NCCL finds it behind",
        evidence, (fix, "A rank that is routinely late does more work, or works slower: balance the shards "
                   "(DistributedSampler, length-bucketed batches), or look at its GPU's clocks and its "
                   "host's load."), scope="job",
        gpus=(r.nvml_dev,) if here and r.nvml_dev is not None else (),
        pids=(r.pid,) if here and r.pid is not None else ())


@rule("rank-straggler", hold_s=5, clear_s=10, order=220, watches="each rank's collective waits against the others'",
      reads=("gpu_busy_util_percent", "numa_local_memory_share", "ras_straggler_min_queries",
             "ras_straggler_others_share", "ras_straggler_share", "runqueue_wait_share", *READS))
def rank_straggler(window: Window, t: Thresholds) -> Iterator[Finding]:
    job = running_job(window)
    if job is None:
        return
    nccl = _from_nccl(job, t)
    from_stacks = list(_from_stacks(window, job, t))
    if nccl is None:
        yield from from_stacks
        return
    for finding in from_stacks:  # the same rank named by both: one finding, with NCCL's figure added
        if finding.severity == "warning" and nccl.pids and finding.pids == nccl.pids:
            yield msgspec.structs.replace(finding, evidence=(*nccl.evidence, *finding.evidence))
            return
    yield nccl


def _from_stacks(window: Window, job: JobSnapshot, t: Thresholds) -> Iterator[Finding]:
    """The rank the ranks' verdict finds slow (advice/ranks.py: its stacks wait in collectives far less than the
    others', which wait for it), in the verdict's words, with what its host says of why."""
    ranks = [r for r in job.ranks if not r.nccl_only]
    if len(ranks) < 2:
        return
    missing = missing_figures(job, t)
    if missing:  # which figure is missing, said once; no straggler is named from half the ranks
        yield rank_straggler.finding(
            "info", "Stragglers cannot be judged: some ranks' stacks are unreadable",
            tuple(missing),
            ("py-spy reads each rank's stack: pip install py-spy, and run hwtop as the job's user or "
             "as root (ptrace; in a container, --cap-add SYS_PTRACE).",),
            scope="job ranks unreadable")
        return
    verdicts = window_verdicts(window, t)
    named = next((v for v in verdicts.blamed if v.state == "slow"), None) if verdicts is not None else None
    slow = next((r for r in ranks if named is not None and (r.host, r.rank) == (named.host, named.rank)), None)
    if named is None or slow is None:
        return  # balanced, or a hang: collective-hang names the rank that never arrived
    others = [r for r in ranks if r is not slow]
    latest = window.latest
    evidence = [named.sentence, *_wait_lines(slow, others, t), *_gpu_lines(latest, (slow, *others[:3]))]
    evidence += [f"against it: {line}" for line in named.disagree]
    cause, fixes = _cause(latest, job, slow, others, t)
    evidence += cause
    fixes.append(f"py-spy dump --pid {slow.pid} (in hwtop: j, the rank, then d) shows what it is doing now."
                 if slow.pid is not None else f"On host {slow.host}: py-spy dump on rank {slow.rank}.")
    yield rank_straggler.finding(
        "warning", f"Rank {slow.rank} holds the job back: the others wait for it",
        tuple(evidence), tuple(fixes), scope="job",
        gpus=(slow.gpu,) if slow.gpu is not None else (), pids=(slow.pid,) if slow.pid is not None else ())


def _wait_lines(slow: RankFigures, others: list[RankFigures], t: Thresholds) -> list[str]:
    waits = [r.collective_share for r in others]
    if len(others) <= 3:
        lines = [f"{_label(r)} waits in collectives {100 * r.collective_share:.0f}% of {r.samples} stack samples"
                 for r in others]
    else:
        low, high = min(waits), max(waits)
        spread = f"{100 * low:.0f}-{100 * high:.0f}%" if f"{100 * low:.0f}" != f"{100 * high:.0f}" else \
            f"{100 * high:.0f}%"  # a range only where they differ: "55-55%" reads as a typo
        lines = [f"the other {len(others)} ranks wait in collectives {spread} of their stack samples (median "
                 f"{100 * median(waits):.0f}%)"]
    lines.append(f"{_label(slow)} waits in them {100 * slow.collective_share:.0f}% (limit "
                 f"{100 * t['straggler_own_wait_ratio']:.0f}% of the others'): it is the one they wait for")
    lines.append(f"where its time goes: {_shares(slow)}" + (f"; commonest site {slow.site}" if slow.site else ""))
    return lines


def _gpu_lines(latest: Snapshot, ranks: tuple[RankFigures, ...]) -> list[str]:
    lines = []
    for rank in ranks:
        gpu = next((g for g in latest.gpus if g.index == rank.gpu), None) if rank.gpu is not None else None
        if gpu is not None and gpu.util_percent is not None:
            power = (f", {gpu.power_w:.0f} W of {gpu.power_limit_w:.0f} W" if gpu.power_w is not None and
                     gpu.power_limit_w else "")
            lines.append(f"rank {rank.rank}'s GPU{gpu.index}: {gpu.util_percent:.0f}% busy{power}")
    return lines
