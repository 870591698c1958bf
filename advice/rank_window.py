"""The verdict of a focused job's ranks as the rules, doctor and the job view have it on one node: `judge` over
the ranks now and the same ranks a look earlier (the window's snapshot at least ras_hang_s older, as far back as
NCCL's counts need to say "unchanged", else its oldest; and stuck_stack_s older, where steps say a stop),
each rank's figures with what its stack sampler says (a still stack, its share on a CPU), and the faults of the
GPUs they own as the window saw them. Asked of each tick's snapshot by several rules: answered once."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hwtop.advice.last_answer import LastAnswer
from hwtop.advice.thresholds import Thresholds
from hwtop.advice.throttle import HARDWARE, POWER, THERMAL
from hwtop.advice.window import Window

if TYPE_CHECKING:  # a job's model loads only with a job (tests/hwtop/test_import_hygiene.py): the rules import this
    from hwtop.advice.ranks import Faults
    from hwtop.model.job import JobSnapshot, RankFigures
    from hwtop.model.snapshot import Snapshot
    from hwtop.model.verdict import GpuFault, Verdicts

# the thresholds a verdict reads: a rule that reads the verdict lists them among its own `reads`
READS = ("data_wait_fraction", "rank_hang_s", "rank_hang_wait_share", "rank_stale_s", "ras_hang_s",
         "stack_min_samples", "straggler_own_wait_ratio", "straggler_peer_wait_share", "stuck_cpu_percent",
         "stuck_stack_s")


def with_stacks(job: JobSnapshot) -> tuple[RankFigures, ...]:
    """The job's ranks with their stack sampler's stillness and CPU share (matched by pid)."""
    import msgspec.structs

    by_pid = {s.pid: s for s in job.stacks}
    out = []
    for r in job.ranks:
        s = by_pid.get(r.pid) if r.pid is not None else None
        out.append(r if s is None or (r.still is s.still and r.main_running == s.main_running) else
                   msgspec.structs.replace(r, still=s.still, main_running=s.main_running))
    return tuple(out)


def earlier(window: Window, seconds: float) -> Snapshot | None:
    """The newest snapshot at least `seconds` before the latest, else the oldest (None: only the latest)."""
    latest = window.latest
    older = [s for s in window.snapshots[:-1] if s.job is not None]
    fit = [s for s in older if latest.time - s.time >= seconds]
    return (fit[-1] if fit else older[0]) if older else None


def gpu_faults(window: Window) -> Faults:
    """(this host, GPU) -> its faults: an Xid raised within the window (when first seen), uncorrectable ECC
    errors, a lost GPU (each stops work), clocks held back by heat or power (slows it)."""
    from hwtop.model.verdict import GpuFault

    latest = window.latest
    host = next((r.host for r in latest.job.ranks if not r.nccl_only), "") if latest.job is not None else ""
    out: dict[tuple[str, int], list[GpuFault]] = {}
    for gpu in latest.gpus:
        faults = []
        if gpu.lost:
            faults.append(GpuFault(gpu.index, "a lost GPU (it stopped answering NVML)", True))
        if gpu.xid_last:
            first = next((s.time for s in window.snapshots if any(
                g.index == gpu.index and g.xid_last == gpu.xid_last for g in s.gpus)), None)
            if first is not None and first > window.snapshots[0].time:  # raised while watched
                faults.append(GpuFault(gpu.index, f"Xid {gpu.xid_last}", True, first))
        if gpu.ecc is not None and gpu.ecc.volatile_uncorrected:
            faults.append(GpuFault(gpu.index, f"{gpu.ecc.volatile_uncorrected} uncorrectable ECC error(s)", True))
        reasons = sorted(set(gpu.throttle_reasons) & (THERMAL | POWER | HARDWARE))
        if reasons:
            faults.append(GpuFault(gpu.index, f"throttled ({', '.join(reasons)})", False))
        if faults:
            out[(host, gpu.index)] = faults
    return out


_ANSWER: LastAnswer[Verdicts | None] = LastAnswer()


def window_verdicts(window: Window, t: Thresholds) -> Verdicts | None:
    """Every rank's verdict for the window's latest snapshot; None without a running job of two ranks or more."""
    latest = window.latest
    job = latest.job
    if job is None or job.status != "running" or len(job.ranks) < 2:
        return None

    def work() -> Verdicts:
        from hwtop.advice.ranks import Look, judge

        looks = [Look(with_stacks(s.job), s.time) if s is not None and s.job is not None else None
                 for s in (earlier(window, t["ras_hang_s"]), earlier(window, t["stuck_stack_s"]))]
        return judge(Look(with_stacks(job), latest.time), looks[0], t, gpu_faults(window), recent=looks[1])

    return _ANSWER.ask(latest, tuple(t[name] for name in READS), work)
