"""A hung collective: DDP's all-reduce waits until every rank arrives, so one rank that never does (stuck in data
loading, a different code path, a dead peer) stops them all. The GPUs say so in a peculiar way: NCCL's kernels
spin on a flag, so utilisation sits at 100% while the power drawn falls to little above idle."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, NamedTuple

from hwtop.advice.grouping import covering
from hwtop.advice.rank_window import READS, window_verdicts
from hwtop.advice.registry import rule
from hwtop.advice.thresholds import Thresholds
from hwtop.advice.window import Window, compute_pids, mean
from hwtop.model.finding import Finding
from hwtop.model.snapshot import GpuSnapshot, Snapshot

if TYPE_CHECKING:
    from hwtop.advice.nccl_ranks import Hang
    from hwtop.model.verdict import Verdict

FIXES = (
    "py-spy dump --pid PID on each rank (in hwtop: f on a rank, then d in the job view): the ranks waiting show "
    "all_reduce/barrier; the one that is elsewhere is the cause.",
    "A rank that skips a collective hangs the others: a data-dependent branch, an uneven last batch "
    "(DistributedSampler(drop_last=True)), or an exception caught on one rank only.",
    "Make a hang fail instead of waiting forever: init_process_group(timeout=timedelta(minutes=5)) with "
    "TORCH_NCCL_ASYNC_ERROR_HANDLING=1; NCCL_DEBUG=INFO and TORCH_NCCL_DUMP_ON_TIMEOUT=1 say which collective.",
)


def _spinning_gpus(window: Window, t: Thresholds) -> dict[int, tuple[float, float]]:
    """GPU index -> (utilisation %, share of the power limit) of each GPU in use that has spun for the whole of the
    last spin_seconds (the recent snapshots read once for all of them)."""
    span = t["spin_seconds"]
    recent = window.recent(span)
    if recent[-1].time - recent[0].time < span * 0.9:  # not yet watched for long enough
        return {}
    by_index: dict[int, list[GpuSnapshot]] = {}
    for snapshot in recent:
        for g in snapshot.gpus:
            if not g.lost:
                by_index.setdefault(g.index, []).append(g)
    return {g.index: found for g in window.latest.gpus if not g.lost and compute_pids(g)
            for found in [_spinning(by_index.get(g.index, []), t)] if found is not None}


def _spinning(samples: list[GpuSnapshot], t: Thresholds) -> tuple[float, float] | None:
    """(utilisation %, share of the power limit) of one GPU's `samples` over the last spin_seconds, when it spun
    for the whole of them."""
    utils = [g.util_percent for g in samples]
    shares = [g.power_w / g.power_limit_w for g in samples if g.power_w is not None and g.power_limit_w]
    if not samples or None in utils or len(shares) != len(samples):
        return None
    low_util = min(u for u in utils if u is not None)
    share = mean(shares)
    if low_util < t["spin_util_percent"] or share is None or share > t["spin_power_share"]:
        return None
    return low_util, share


def _odd_rank(snapshot: Snapshot) -> str | None:
    """The one rank on the CPU while the others sleep in the collective: the likely straggler."""
    workload = snapshot.workload
    pids = {r.pid: r.rank for r in workload.ranks if r.pid} if workload else {}
    if len(pids) < 2:
        return None
    running = [p for p in snapshot.processes if p.pid in pids and p.state == "R"]
    if len(running) != 1:
        return None
    process = running[0]
    cpu = "" if process.cpu_percent is None else f", {process.cpu_percent:.0f}% CPU"
    return (f"rank {pids[process.pid]} (pid {process.pid}) is running on the CPU{cpu} while the others sleep: it "
            "has not reached the collective")


class _Hung(NamedTuple):
    """The ranks' verdict of a hang (advice/ranks.py): the blamed rank, or None where every watched rank waits for
    one no hwtop watches; the verdict's own words and signals as evidence."""

    verdict: Verdict | None
    evidence: tuple[str, ...]


HUNG = ("before-collective", "inside-collective", "dead")


def _hung(window: Window, t: Thresholds) -> _Hung | None:
    """From the ranks' verdict, where it rests on their stacks or their Flight Recorder; where NCCL's counts named
    the rank, what else agrees (NCCL's own words come through _ras_hang, with their communicator); a stack that
    stopped on its own speaks through loop-stuck."""
    verdicts = window_verdicts(window, t)
    if verdicts is None:
        return None
    named = [v for v in verdicts.blamed if v.by in ("flight-recorder", "stacks") and v.state in HUNG]
    if named:
        v = named[0]
        return _Hung(v, (v.sentence, *v.agree, *(f"against it: {line}" for line in v.disagree)))
    by_nccl = [v for v in verdicts.blamed if v.by == "nccl" and v.state in HUNG]
    if by_nccl:  # NCCL's own words come with its communicator (_nccl_finding): here, what else agrees
        v = by_nccl[0]
        return _Hung(v, tuple(line for line in v.agree if not line.startswith("NCCL RAS: ")))
    waiting = [v for v in verdicts.ranks if v.by == "stacks" and v.state == "inside-collective" and not v.held_by]
    return _Hung(None, waiting[0].agree) if waiting else None


def _title(verdict: Verdict | None, snapshot: Snapshot) -> str:
    """The rank named as NCCL's figures name it (_nccl_finding): its host only where it is not this one, so the
    title stays one whichever figures named the rank first."""
    if verdict is None:
        return "Every watched rank waits in a collective"
    job = snapshot.job
    here = next((r.host for r in job.ranks if not r.nccl_only), None) if job is not None else None
    who = f"Rank {verdict.rank}" + ("" if verdict.host == here else f" on {verdict.host}")
    if verdict.state == "before-collective" and verdict.collective:
        return f"{who} never launched {verdict.collective}"
    if verdict.state == "inside-collective":
        return f"{who} launched {verdict.collective or 'a collective'} and never finished it"
    return f"{who} never reached the collective the others wait in"


def _ras_hang(snapshot: Snapshot, t: Thresholds) -> Hang | None:
    """From NCCL's own counts (its RAS service): the rank that has not launched the collective the
    others have, with nothing launched since."""
    job = snapshot.job
    if job is None or job.status != "running" or job.nccl is None or not job.nccl.comms:
        return None
    from hwtop.advice.nccl_ranks import hang

    return hang(job.nccl, t)


def _nccl_finding(ras: Hang, spinning: dict[int, tuple[float, float]], snapshot: Snapshot,
                  t: Thresholds, local_evidence: list[str]) -> Finding:
    """NCCL's figures first, then what this host's own figures say of the same hang (its steps, its GPUs, its
    ranks' stacks), as the finding reads without RAS: one finding, one title, whichever figures named the rank."""
    comm = ras.comm
    evidence = [f"NCCL RAS: {ras.sentence}",
                f"no count of communicator {comm.comm.hash} ({comm.comm.size} ranks) changed for {ras.still_s:.0f} s "
                f"(limit {t['ras_hang_s']:.0f} s)"]
    for r in ras.behind[:3]:
        evidence.append(f"rank {r.rank} has launched " + ", ".join(f"{value} {op}" for op, value in r.counts if value))
    evidence.extend(line for line in local_evidence if line not in evidence)
    local = {p.pid for p in snapshot.job.processes if p.alive} if snapshot.job is not None else set()
    first = ras.behind[0]
    here = [r for r in ras.behind if r.pid in local]
    fixes = ((f"py-spy dump --pid {first.pid} shows where rank {first.rank} is instead." if here else
              f"On {first.host}: py-spy dump --pid {first.pid} shows where rank {first.rank} is instead."),
             *FIXES[1:])
    where = "" if here and here[0] is first else f" on {first.host}"  # one title whichever figures name the rank
    title = f"Rank {first.rank}{where} never reached the collective the others wait in"
    return collective_hang.finding(
        "critical", title, tuple(evidence), fixes,
        scope="job", gpus=tuple(sorted({*spinning, *(r.nvml_dev for r in here if r.nvml_dev is not None)})),
        pids=tuple(sorted({r.pid for r in here if r.pid is not None})))


# The rule itself waits spin_seconds of flat spinning (or the job's 15 s without a step): no extra hold.
@rule("collective-hang", severity="critical", hold_s=0, clear_s=10, order=140,
      watches="GPUs busy at idle power, and steps that stop",
      reads=("spin_power_share", "spin_seconds", "spin_util_percent", *READS))
def collective_hang(window: Window, t: Thresholds) -> Iterator[Finding]:
    latest = window.latest
    spinning = _spinning_gpus(window, t)
    ras = _ras_hang(latest, t)
    workload = latest.workload
    stalled = workload is not None and workload.status == "stalled"
    hung = _hung(window, t)
    if ras is None and not spinning and not stalled and hung is None:
        return
    if ras is None and hung is not None and not spinning and not stalled:  # the ranks' own figures say it
        named = hung.verdict
        yield collective_hang.finding(
            "critical", _title(named, latest), hung.evidence, FIXES, scope="job",
            gpus=(named.gpu,) if named is not None and named.gpu is not None else (),
            pids=(named.pid,) if named is not None and named.pid is not None else ())
        return
    evidence = _local_evidence(latest, spinning, hung, t)
    if ras is not None:  # NCCL names the rank: the strongest figure there is, checked against this host's
        yield _nccl_finding(ras, spinning, latest, t, evidence)
        return
    yield _spin_finding(latest, spinning, hung, evidence)


def _spin_finding(latest: Snapshot, spinning: dict[int, tuple[float, float]], hung: _Hung | None,
                  evidence: list[str]) -> Finding:
    """GPUs polling at idle power, or steps that stopped, with the rank the verdict names where it names one."""
    workload = latest.workload
    pids = tuple(sorted({pid for g in latest.gpus if g.index in spinning for pid in compute_pids(g)}))
    if not pids and workload is not None:
        pids = workload.pids
    named = hung.verdict if hung is not None else None
    title = _title(named, latest) if named is not None else "The job's ranks wait in a collective"
    return collective_hang.finding("critical", title, tuple(evidence), FIXES, scope="job",
                                   gpus=tuple(sorted(spinning)), pids=pids)


def _local_evidence(latest: Snapshot, spinning: dict[int, tuple[float, float]], hung: _Hung | None,
                    t: Thresholds) -> list[str]:
    """What this host's own figures say of a hang: the steps that stopped, the GPUs polling, the odd rank on a
    CPU, the ranks' stacks."""
    workload = latest.workload
    evidence = []
    if workload is not None and workload.status == "stalled":
        at_step: dict[int, list[str]] = {}
        for r in workload.ranks:
            if r.step is not None:
                at_step.setdefault(r.step, []).append(f"rank {r.rank}")
        steps = ", ".join(f"{covering(ranks)[0]} at step {step}" for step, ranks in at_step.items())
        evidence.append("the job's ranks stopped reporting steps (status stalled)" + (f": {steps}" if steps else ""))
    alike: dict[tuple[str, str], list[str]] = {}  # GPUs whose figures read the same are named once: GPU0-7
    for index, (util, share) in sorted(spinning.items()):
        alike.setdefault((f"{util:.0f}", f"{100 * share:.0f}"), []).append(f"GPU{index}")
    for (util, share), gpus in alike.items():
        evidence.append(f"{covering(gpus)[0]} {util}% busy for {t['spin_seconds']:.0f} s yet drawing "
                        f"{share}% of {'its' if len(gpus) == 1 else 'their'} power limit (limit "
                        f"{100 * t['spin_power_share']:.0f}%): kernels polling, not computing")
    odd = _odd_rank(latest)
    if odd:
        evidence.append(odd)
    if hung is not None:
        evidence.extend(hung.evidence)
    return evidence
