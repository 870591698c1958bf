"""worker-stuck and loop-stuck: a job that has stopped, not slowed. A DataLoader worker whose stack has not moved
inside its Dataset (and uses no CPU) while its training loop waits for that worker's batch; a main thread whose
stack has not moved outside the loader and the collectives (where data-starved, worker-stuck and collective-hang
speak). Both read the stack samplers' stillness (probes/stack_sampler.py), never /proc."""


from __future__ import annotations

from collections.abc import Iterator

from hwtop.advice.job_facts import (
    alive,
    member_scope,
    process_mean,
    running_job,
    sampled,
    stuck_workers,
    who,
    workers_of,
)
from hwtop.advice.rank_window import READS, window_verdicts
from hwtop.advice.registry import rule
from hwtop.advice.thresholds import Thresholds
from hwtop.advice.window import Window
from hwtop.model.finding import Finding

SPAN_S = 10.0
NOT_HERE = ("data", "collective", "workers")  # a main thread waiting there: the loader's and collectives' rules


def _cpu(cpu: float | None) -> str:
    return "N/A" if cpu is None else f"{cpu:.1f}%"


@rule("worker-stuck", order=221, severity="critical", hold_s=0.0, clear_s=10.0,
      watches="DataLoader workers whose stack stopped while the loop waits for them",
      reads=("data_wait_fraction", "stack_min_samples", "stuck_cpu_percent", "stuck_stack_s", "stuck_switches_per_s"))
def worker_stuck(window: Window, t: Thresholds) -> Iterator[Finding]:
    job = running_job(window)
    if job is None:
        return
    mains = {s.pid: s for s in sampled(job, t)}
    by_pid = {p.pid: p for p in alive(job)}
    for w, cpu in stuck_workers(window, t, job):
        main = mains.get(w.parent) if w.parent is not None else None
        if main is None or main.fraction("data") < t["data_wait_fraction"]:
            continue  # its loop is not waiting for it (yet): prefetched batches still feed the step
        still = w.still
        assert still is not None
        where = still.site or still.frame or "?"
        evidence = [
            f"DataLoader worker pid {w.pid} has not moved for {still.seconds:.0f} s: all {still.samples} stack "
            f"samples at {where}" + (f" (innermost frame {still.frame})" if still.frame and still.frame != where
                                     else "")
            + f", using {_cpu(cpu)} of a core, never woken (limits {t['stuck_stack_s']:.0f} s, "
            f"{t['stuck_cpu_percent']:.0f}%, {t['stuck_switches_per_s']:.0f} wake-up/s)",
            f"{who(by_pid.get(main.pid), main.pid)}'s main thread waits for data in {100 * main.fraction('data'):.0f}% "
            f"of {main.samples} stack samples" + (f", at {main.site('data')}" if main.site("data") else "")
            + ": for that worker's batch, which will not come"]
        others = [o for o in job.worker_stacks if o.parent == w.parent and o.pid != w.pid]
        if others:
            idle = ", ".join(f"pid {o.pid} making batches in {100 * o.busy:.0f}% of its samples" for o in others[:4])
            evidence.append(f"its other worker(s): {idle}")
        elif len(workers_of(job, main.pid)) > 1:
            evidence.append(f"its other {len(workers_of(job, main.pid)) - 1} worker(s) were not sampled")
        fixes = (
            f"A hang in the input pipeline: worker pid {w.pid} is blocked at {where} (a lock never released, a dead "
            "network mount, a decoder that deadlocked). Its whole stack: d on it in the job view, or py-spy dump "
            f"--pid {w.pid}.",
            "DataLoader(..., timeout=60) makes a batch that takes longer than 60 s raise an error with the worker's "
            "traceback instead of hanging the job forever.",
            "Locks, files and connections a Dataset holds are copied into each worker at fork, held or not: open "
            "them in worker_init_fn (or on first use in the worker), and release every lock on every path "
            "(with lock: ...).")
        yield worker_stuck.finding("critical", f"DataLoader worker pid {w.pid} is stuck: the job has stopped",
                                   tuple(evidence), fixes, scope=f"pid {w.pid}", pids=(w.pid, main.pid),
                                   cause="stuck worker", measure=still.seconds)


def _not_stopped(window: Window, t: Thresholds) -> set[int]:
    """The pids of ranks whose verdict is not a stop of their own (advice/ranks.py): progress between two looks
    (NCCL's counts, steps, the Flight Recorder) outweighs a still stack, a rank with such counts is judged only
    once two looks compare them, and a rank the collectives' rules name is theirs. A rank waiting on one line for
    its GPU while its counts advance is running, not stuck."""
    verdicts = window_verdicts(window, t)
    if verdicts is None:
        return set()
    return {v.pid for v in verdicts.ranks if v.pid is not None and (v.by != "still-stack" or v.state == "unknown")}


@rule("loop-stuck", order=222, severity="critical", hold_s=0.0, clear_s=10.0,
      watches="main threads whose stack stopped outside the loader and the collectives",
      reads=("stuck_stack_s", "stuck_cpu_percent", "stack_min_samples", *READS))
def loop_stuck(window: Window, t: Thresholds) -> Iterator[Finding]:
    job = running_job(window)
    if job is None:
        return
    by_pid = {p.pid: p for p in alive(job)}
    moving = _not_stopped(window, t)
    for s in sampled(job, t):
        still = s.still
        if still is None or still.seconds < t["stuck_stack_s"] or still.category in NOT_HERE or s.pid in moving:
            continue
        # its main thread's share on a CPU covers the sampler's window, its process's CPU the last SPAN_S: a thread
        # that stopped after working has the first high and the second near 0; one that spins has both high
        shares = [100.0 * s.main_running if s.main_running is not None else None,
                  process_mean(window, s.pid, lambda p: p.cpu_percent, SPAN_S)]
        busy = min((v for v in shares if v is not None), default=None)
        if busy is None or busy > t["stuck_cpu_percent"]:
            continue
        where = still.site or still.frame or "?"
        process = by_pid.get(s.pid)
        evidence = [
            f"{who(process, s.pid)}'s main thread has not moved for {still.seconds:.0f} s: all {still.samples} "
            f"stack samples at {where}" + (f" (innermost frame {still.frame})" if still.frame and still.frame != where
                                           else "")
            + f", on a CPU {busy:.1f}% of the time (limits {t['stuck_stack_s']:.0f} s, "
            f"{t['stuck_cpu_percent']:.0f}%): no step is being taken",
            "it is not waiting for data or in a collective: the job's own code waits there"]
        fixes = (
            f"A hang in the training loop: pid {s.pid}'s main thread is blocked at {where} (a lock, a queue or an "
            "event nobody will set, a subprocess or a socket that never answers). Its whole stack and its other "
            f"threads: d on it in the job view, or py-spy dump --pid {s.pid}.",
            "Give each blocking call a timeout (queue.get(timeout=...), lock.acquire(timeout=...), "
            "Event.wait(timeout=...), socket timeouts), so a hang becomes an error with a traceback.")
        yield loop_stuck.finding("critical", f"{who(process, s.pid)} is stuck: its main thread has stopped",
                                 tuple(evidence), fixes, scope=member_scope(process, s.pid), pids=(s.pid,),
                                 cause="stuck main thread", measure=still.seconds)
