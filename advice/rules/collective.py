"""A hung collective: DDP's all-reduce waits until every rank arrives, so one rank that never does (stuck in data
loading, a different code path, a dead peer) stops them all. The GPUs say so in a peculiar way: NCCL's kernels
spin on a flag, so utilisation sits at 100% while the power drawn falls to little above idle."""

from __future__ import annotations

from collections.abc import Iterator

from hwtop.advice.thresholds import Thresholds
from hwtop.advice.window import Window, compute_pids, mean
from hwtop.model.finding import Finding
from hwtop.model.snapshot import GpuSnapshot, Snapshot

FIXES = (
    "py-spy dump --pid PID on each rank (in hwtop: f on a rank, then d in the job view): the ranks waiting show "
    "all_reduce/barrier; the one that is elsewhere is the cause.",
    "A rank that skips a collective hangs the others: a data-dependent branch, an uneven last batch "
    "(DistributedSampler(drop_last=True)), or an exception caught on one rank only.",
    "Make a hang fail instead of waiting forever: init_process_group(timeout=timedelta(minutes=5)) with "
    "TORCH_NCCL_ASYNC_ERROR_HANDLING=1; NCCL_DEBUG=INFO and TORCH_NCCL_DUMP_ON_TIMEOUT=1 say which collective.",
)


def _spinning(window: Window, gpu: GpuSnapshot, t: Thresholds) -> tuple[float, float] | None:
    """(utilisation %, share of the power limit) when `gpu` has spun for the whole of the last spin_seconds."""
    span = t["spin_seconds"]
    recent = window.recent(span)
    if recent[-1].time - recent[0].time < span * 0.9:  # not yet watched for long enough
        return None
    samples = [g for s in recent for g in s.gpus if g.index == gpu.index and not g.lost]
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


def collective_hang(window: Window, t: Thresholds) -> Iterator[Finding]:
    latest = window.latest
    spinning = {g.index: found for g in latest.gpus if not g.lost and compute_pids(g)
                for found in [_spinning(window, g, t)] if found is not None}
    workload = latest.workload
    stalled = workload is not None and workload.status == "stalled"
    if not spinning and not stalled:
        return
    evidence = []
    if stalled and workload is not None:
        known = [r for r in workload.ranks if r.step is not None]
        if len(known) > 1 and len({r.step for r in known}) == 1:  # DDP steps in lockstep: one figure says it
            steps = f"all {len(known)} ranks at step {known[0].step}, the one they finished before the hang"
        else:
            steps = ", ".join(f"rank {r.rank} at step {r.step}" for r in known)
        evidence.append("the job's ranks stopped reporting steps (status stalled)" + (f": {steps}" if steps else ""))
    for index, (util, share) in sorted(spinning.items()):
        evidence.append(f"GPU{index} {util:.0f}% busy for {t['spin_seconds']:.0f} s yet drawing "
                        f"{100 * share:.0f}% of its power limit (limit {100 * t['spin_power_share']:.0f}%): "
                        "kernels polling, not computing")
    odd = _odd_rank(latest)
    if odd:
        evidence.append(odd)
    pids = tuple(sorted({pid for g in latest.gpus if g.index in spinning for pid in compute_pids(g)}))
    if not pids and workload is not None:
        pids = workload.pids
    title = "Ranks wait in a collective" if spinning else "The job stopped making steps"
    yield Finding("collective-hang", "critical", title, tuple(evidence), FIXES, scope="job",
                  gpus=tuple(sorted(spinning)), pids=pids)
