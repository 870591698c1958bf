"""`hwtop doctor`: sample this box (optionally while the embedded job runs, or watching a running job named
by --pid/--job), run the advice rules, print the findings. Exit 0 when nothing at warning or above was seen, 1
when something was, 2 for bad usage (a pid that does not exist, is not Python, or may not be inspected), 3 when
the embedded workload crashed (the failed rank's exit code and its last stderr lines go to stderr)."""

from __future__ import annotations

import argparse
import json
import re
import signal
import sys
import time
from dataclasses import dataclass
from typing import Any

import msgspec.structs

from hwtop.advice.rules.straggler import rank_straggler
from hwtop.advice.thresholds import Thresholds
from hwtop.advice.timeline import clock
from hwtop.cli.machine import open_sampler
from hwtop.cli.options import (
    WORKLOAD_KINDS,
    Invocation,
    add_job_options,
    add_source_options,
    interval_seconds,
    source_config,
)
from hwtop.cli.stop_signals import StopSignals
from hwtop.model.finding import Finding
from hwtop.model.job import JobSnapshot, RankFigures, RankStacks
from hwtop.model.ras import NcclView
from hwtop.model.safe_text import printable, printable_lines
from hwtop.model.snapshot import Snapshot
from hwtop.probes.nccl_ras.manners import DEFAULT_INTERVAL_S, MIN_INTERVAL_S
from hwtop.session.session import Session
from hwtop.session.sources import JobRefused

STARTUP_LIMIT_S = 180.0  # a workload that has not reported a step by then has failed to start
EXIT_CRASHED = 3
STDERR_LINES = 8  # of a crashed workload's stderr, shown
_RANK_EXIT = re.compile(r"rank (\d+) \(pid (\d+)\) terminated with exit code (-?\d+)")


@dataclass(slots=True)
class Seen:
    finding: Finding
    first: float
    last: float
    active: bool = True
    samples: tuple[RankStacks, ...] = ()  # the job's stack samples the last time its condition held


def add_options(doctor: argparse.ArgumentParser) -> None:
    doctor.description = (
        "Sample this box for --seconds (optionally while the embedded job runs, or watching a running job: "
        "--pid PID, --job NAME_OR_PID), apply the advice rules and print each finding with its evidence and fix. "
        "Exit 0: nothing at warning or above; 1: something was found; 2: bad usage (a pid that does not exist, is "
        "not Python, or may not be inspected); 3: the --workload crashed (its failed rank's exit code and last "
        "stderr lines on stderr). Options after --workload KIND that doctor does not know go to the job "
        "(hwtop workload --help).")
    doctor.add_argument("--seconds", type=interval_seconds, default=None,
                        help="how long to sample (default 10; 20 with --pid/--job, as stack samples take time)")
    add_job_options(doctor, sub=True)
    doctor.add_argument("--json", action="store_true", help="print the findings as JSON")
    doctor.add_argument("--workload", metavar="KIND", choices=WORKLOAD_KINDS,
                        help=f"run the embedded job of this kind meanwhile: {', '.join(WORKLOAD_KINDS)} (needs "
                             "torch)")
    add_source_options(doctor, "seconds between samples (default 1)", sub=True)


def run(call: Invocation) -> int:
    """The job to watch (--pid/--job, checked strictly: doctor's answer is about it) or to run (--workload, with
    the options doctor does not know), then doctor_command."""
    args, extra = call.args, call.extra
    job_args = None
    watching = bool(args.pid or args.job)  # --workload with either was refused by check_exclusive
    if args.seconds is None:
        args.seconds = 20.0 if watching else 10.0
    if args.workload is not None:
        from hwtop.workload.launcher import torch_missing

        missing = torch_missing()
        if missing:
            print(f"hwtop: error: {missing}", file=sys.stderr)
            return 2
        job_args = ["--scenario", args.workload, *extra]
        if "--steps" not in extra and "--seconds" not in extra:
            job_args += ["--seconds", str(args.seconds + 60)]  # outlives the sampling; stopped when it ends
    try:  # the job, checked strictly: doctor's answer is about it
        sampler = open_sampler(source_config(args, strict=True, workload_stacks=True))
    except JobRefused as refused:
        print(f"hwtop: error: {refused}", file=sys.stderr)
        return 2
    return doctor_command(sampler, call.config.thresholds, args.seconds, args.interval, job_args, args.json)


def run_doctor(sampler: Any, thresholds: Thresholds, seconds: float, interval: float,
               job_args: list[str] | None, stop: StopSignals | None = None,
               ) -> tuple[dict[tuple[str, str], Seen], dict[str, Any]]:
    """Samples for `seconds` (after the job's first step, when there is a job), or until `stop` is asked; every
    finding shown meanwhile."""
    stop = stop or StopSignals()  # not entered: never asked
    session = Session(sampler, thresholds)
    seen: dict[tuple[str, str], Seen] = {}
    facts: dict[str, Any] = {"ticks": 0, "workload": None}
    if job_args is not None and session.workload is not None:
        session.workload.start(job_args)  # from its first step, its job is watched as --pid watches one
    try:
        started = time.monotonic()
        while job_args is not None:  # wait for the job's first step: its start-up is not its steady state
            state = session.tick().snapshot.workload
            if state is None or any(r.step for r in state.ranks) or \
                    state.status in ("crashed", "finished", "stopped") or \
                    time.monotonic() - started > STARTUP_LIMIT_S or stop.asked:
                break
            time.sleep(interval)
        if stop.asked:
            facts["stopped"] = True
            return seen, facts
        end = time.monotonic() + seconds
        ended_ticks = 0
        last_running: JobSnapshot | None = None
        nccl_extended = False
        while True:
            frame = session.tick()
            snapshot, findings = frame.snapshot, frame.findings
            facts["ticks"] += 1
            if snapshot.job is not None:
                facts.setdefault("job_since", snapshot.time)
                if snapshot.job.nccl is not None and not nccl_extended:  # NCCL RAS (issue 42)
                    nccl_extended = True
                    ras = getattr(sampler, "nccl_ras", None)
                    longer = nccl_watch_s(ras.interval_s if ras is not None else DEFAULT_INTERVAL_S, thresholds)
                    if longer > seconds:
                        end = max(end, started + longer)
                        facts["nccl_watch_s"] = longer
                ended_ticks = ended_ticks + 1 if snapshot.job.status == "ended" else 0
                if snapshot.job.status == "running":
                    last_running = snapshot.job
            keys = {f.key for f in findings}
            for finding in findings:
                entry = seen.get(finding.key)
                if entry is None:
                    entry = seen[finding.key] = Seen(finding, snapshot.time, snapshot.time)
                else:
                    entry.finding, entry.last, entry.active = finding, snapshot.time, True
                if snapshot.job is not None and finding.held_at in (None, snapshot.time):
                    entry.samples = snapshot.job.stacks
            for key, entry in seen.items():
                if key not in keys:
                    entry.active = False
            if time.monotonic() >= end or ended_ticks >= 2 or stop.asked:
                break  # the watch is over, a job that ended has nothing more to show, or a stop was asked
            time.sleep(max(0.0, min(interval, end - time.monotonic())))  # a signal's stop waits for this tick
        if stop.asked:
            facts["stopped"] = True  # checked here: a stop while the facts below are gathered cuts nothing short
            return seen, facts
        facts["host"] = snapshot.host.hostname if snapshot.host else None
        facts["gpus"] = len(snapshot.gpus)
        facts["gpu_message"] = None if snapshot.gpus else (snapshot.gpu_system.message if snapshot.gpu_system else None)
        if snapshot.workload is not None:
            w = snapshot.workload
            facts["workload"] = {"scenario": w.scenario, "status": w.status, "exit_code": w.exit_code,
                                 "stderr_tail": list(w.stderr_tail)}
        facts["rule_errors"] = dict(frame.rule_errors)
        facts["timeline"] = [change.to_dict() for change in frame.timeline]
        if snapshot.job is not None:
            shown = last_running or snapshot.job  # an ended job's last live view, with how it ended
            watched_s = snapshot.time - (facts.get("job_since") or snapshot.time)
            if snapshot.job.status == "running":
                final = session.finish_stacks()
                if final is not None:
                    from hwtop.probes.job import with_stacks
                    from hwtop.probes.stack_sampler import WINDOW_S as STACK_WINDOW_S

                    shown = msgspec.structs.replace(shown, stacks=final, ranks=with_stacks(shown.ranks, final))
                    whole = with_samples(snapshot, final)
                    settle(seen, session, snapshot, whole, covers_the_watch=watched_s <= STACK_WINDOW_S)
            facts["job"] = {**job_facts(shown, watched_s), "nccl_watch_s": facts.pop("nccl_watch_s", None),
                            "status": snapshot.job.status, "message": snapshot.job.message,
                            "exit_codes": job_facts(snapshot.job, 0.0)["exit_codes"]}
    finally:
        if sampler.workload is not None:
            sampler.workload.stop()
            _full_stderr(sampler.workload, facts.get("workload"))
        facts.pop("job_since", None)
    return seen, facts


def nccl_watch_s(interval_s: float, thresholds: Thresholds) -> float:
    """How long doctor watches a job NCCL's RAS answers for (asked every `interval_s`): the first answer comes an
    interval after libnccl is seen, and a hang needs answers spanning ras_hang_s, one interval of slack."""
    return 2 * max(MIN_INTERVAL_S, interval_s) + thresholds["ras_hang_s"] + 2.0


def settle(seen: dict[tuple[str, str], Seen], session: Session, last: Snapshot, whole: Snapshot,
           covers_the_watch: bool) -> None:
    """The report ends on what the stack samples of the watch say. While doctor watches, the rules read the
    chunks of samples that have ended: in a 15 s watch, often only the first 3 s after attaching (a job's warm-up
    among them). With the chunks still running read at the end (`whole`), the rules are asked once more. A finding
    they support carries their figures. One they contradict (found with the last chunks, or with the samples it
    last held with, not with the whole watch's) is dropped when they cover the whole watch (the samples it was
    shown from are among them: it never held over the watch) and cleared otherwise (a long watch: it held
    earlier). Findings whose answer the samples do not change keep what the watch showed. A finding only
    they show is added when its rule's hold time is within the span of those samples: a hang speaks on one look
    (on a loaded box the chunk that completes a stuck thread's 10 s of stillness may be the one still running
    when the watch ends), and a share over the whole span is met by some stretch of it as long as the hold (a
    loop that computes in 3% of its samples showed one in the 128 of its second chunk, and work-in-loop's "it
    is training" was not met until its second chunk, 4.8 s before the watch ended). It is added whether or not
    the last look showed it too, as long as a look without samples does not: a rule that does not read them
    keeps its hold."""
    found_before, _ = session.engine.holding(last)
    found_after, failed = session.engine.holding(whole)
    before, after = {f.key for f in found_before}, {f.key: f for f in found_after}
    for key, entry in list(seen.items()):
        if not entry.active:
            continue  # cleared while watched: that stands
        if key in after:
            entry.finding = msgspec.structs.replace(after[key], since=entry.finding.since)
        elif key[0] in failed:
            continue  # a rule that raised contradicts nothing
        elif key in before or shown_by(session, last, entry):
            if covers_the_watch:
                del seen[key]
            else:
                entry.active = False
    engine = session.engine
    span = max((s.window_s for s in whole.job.stacks), default=0.0) if whole.job is not None else 0.0
    held = {r.id for r in engine.rules if engine.thresholds.hold_s.get(r.id, r.hold_s) <= span}
    bare, _ = engine.holding(with_samples(last, ()))
    made_by_samples = set(after) - {f.key for f in bare}  # what a look without them does not find
    for key, finding in after.items():
        if key not in seen and key[0] in held and (key not in before or key in made_by_samples):
            seen[key] = Seen(msgspec.structs.replace(finding, since=whole.time), whole.time, whole.time)


def with_samples(snapshot: Snapshot, stacks: tuple[RankStacks, ...]) -> Snapshot:
    """`snapshot` with other stack samples in its job (and the ranks' figures read from them)."""
    from hwtop.probes.job import with_stacks

    job = snapshot.job
    if job is None:
        return snapshot
    return msgspec.structs.replace(snapshot, job=msgspec.structs.replace(
        job, stacks=stacks, ranks=with_stacks(job.ranks, stacks)))


def shown_by(session: Session, last: Snapshot, entry: Seen) -> bool:
    """Whether the rules find `entry` at the end given the samples it last held with: then those samples made it,
    and the whole watch's (which include them) unmake it. Without, it is the other figures that moved."""
    if not entry.samples or last.job is None or entry.samples == last.job.stacks:
        return False
    found, _ = session.engine.holding(with_samples(last, entry.samples))
    return any(f.key == entry.finding.key for f in found)


def _full_stderr(monitor: Any, workload: dict[str, Any] | None, wait_s: float = 2.0) -> None:
    """A crashed workload's last stderr lines, read once its output has been drained: the live state keeps three,
    and the launcher's own "rank N ... terminated with exit code X" comes last, after the rank's traceback."""
    if not workload or workload.get("status") != "crashed":
        return
    reader = getattr(monitor, "_reader", None)
    if reader is not None:
        reader.join(wait_s)  # it reads stderr once stdout has closed
    tail = list(getattr(monitor.job, "stderr_tail", ()))
    if tail:
        workload["stderr_tail"] = tail[-STDERR_LINES:]


def job_facts(job: JobSnapshot, watched_s: float) -> dict[str, Any]:
    """The focused job in doctor's report: who is in it and where each rank's time went."""
    from hwtop.probes.stack_classify import LABELS

    ranks = [p for p in job.processes if p.role.startswith("rank")]
    return {
        "label": job.label, "roots": list(job.roots), "status": job.status, "watched_s": round(watched_s, 1),
        "message": job.message,
        "processes": sum(1 for p in job.processes if p.alive), "ranks": len(ranks), "pids_seen": job.pids_seen,
        "launcher": next((p.pid for p in job.processes if p.role == "launcher"), None),
        "exit_codes": {str(p.pid): p.exit_code for p in job.processes if p.exit_code is not None},
        "workers_started_last_minute": job.workers_started_last_minute,
        "workers_exited_last_minute": job.workers_exited_last_minute,
        "pss_bytes": job.pss_bytes, "usable_cores": job.usable_cores,
        "stack_message": job.stack_message,
        "stacks": [{"pid": s.pid, "rank": s.rank, "samples": s.samples, "window_s": s.window_s,
                    "fractions": {LABELS.get(name, name): round(value, 3) for name, value in s.fractions},
                    "data_loader": s.data_loader, "message": s.message, "handover": s.handover,
                    "main_cpu": s.main_cpu} for s in job.stacks],
        "rank_figures": [{"rank": r.rank, "host": r.host, "pid": r.pid, "local_rank": r.local_rank, "gpu": r.gpu,
                          "samples": r.samples, "collective": round(r.collective_share, 3), "steps": r.steps,
                          "shares": {LABELS.get(name, name): round(value, 3) for name, value in r.shares},
                          "phase_seconds": {name: round(value, 1) for name, value in r.phase_seconds},
                          "site": r.site, **nccl_rank_facts(r)} for r in job.ranks],
        "nccl": nccl_facts(job.nccl),
        # what decides NCCL's transport, as the ranks' environment says (the network rules read the same)
        "nccl_env": dict(sorted({k: v for p in ranks for k, v in p.nccl_env}.items())),
        "world_size": next((p.world_size for p in ranks if p.world_size), None),
        "local_world_size": next((p.local_world_size for p in ranks if p.local_world_size), None),
    }


def nccl_rank_facts(rank: RankFigures) -> dict[str, Any]:
    """What NCCL's RAS says of one rank (issue 42): nothing where it was not asked."""
    if rank.nccl_state is None:
        return {}
    return {"nccl_state": rank.nccl_state, "lag": rank.lag, "collectives": dict(rank.collectives),
            "nccl_only": rank.nccl_only}


def nccl_facts(view: NcclView | None) -> dict[str, Any] | None:
    """Where hwtop asked NCCL's RAS, what it answered and what went wrong asking."""
    if view is None:
        return None
    return {"address": view.address, "source": view.source, "queries": view.queries, "format": view.format,
            "nccl_version": view.nccl_version, "reply_bytes": view.reply_bytes, "holding": view.holding,
            "errors": list(view.errors),
            "communicators": [{"hash": c.comm.hash, "size": c.comm.size, "queries": c.queries,
                               "unchanged_s": round(c.queried_at - c.same_since, 1), "window": c.window,
                               "behind": {str(rank): n for rank, n in c.behind},
                               "missing": [{"rank": r.rank, "host": r.host, "pid": r.pid, "gpu": r.nvml_dev,
                                            "dead": r.dead, "since": c.missing_from(r.rank)}
                                           for r in c.comm.ranks if r.missing]} for c in view.comms]}


def _nccl_lines(nccl: dict[str, Any] | None) -> list[str]:
    if not nccl:
        return []
    version = f", NCCL {nccl['nccl_version']}" if nccl.get("nccl_version") else ""
    out = [f"  NCCL RAS at {nccl['address']} ({nccl['source']}): {nccl['queries']} answer(s)"
           + (f" in {nccl['format']}" if nccl.get("format") else "") + version]
    if nccl.get("holding"):
        out.append(f"  NCCL RAS: {nccl['holding']}")
    out += [f"  NCCL RAS error: {line}" for line in nccl.get("errors", [])[-3:]]
    return out


def _job_lines(job: dict[str, Any], straggler: int | None = None) -> list[str]:
    out = [f"  watching {job['label']}: {job['status']}, {job['processes']} process(es), {job['ranks']} rank(s), "
           f"watched {job['watched_s']:.0f} s; {job['workers_exited_last_minute']} DataLoader workers exited in the "
           "last minute"]
    if job.get("message"):
        out.append(f"  job: {job['message']}")
    if job.get("stack_message"):
        out.append(f"  stacks: {job['stack_message']}")
    if job.get("nccl_watch_s"):
        out.append(f"  watched {job['nccl_watch_s']:.0f} s: NCCL's RAS answers come 10 s apart by default, and a "
                   "hang needs answers spanning 30 s")
    if job.get("nccl_env"):
        out.append("  NCCL: " + " ".join(f"{k}={v}" for k, v in job["nccl_env"].items()))
    for stacks in job["stacks"]:
        who = f"rank {stacks['rank']} (pid {stacks['pid']})" if stacks["rank"] is not None else f"pid {stacks['pid']}"
        if stacks["samples"]:
            parts = sorted(stacks["fractions"].items(), key=lambda kv: -kv[1])
            out.append(f"  where {who} spends its time ({stacks['samples']} samples over {stacks['window_s']:.0f} s): "
                       + ", ".join(f"{name} {100 * value:.0f}%" for name, value in parts))
        elif stacks.get("message"):
            out.append(f"  where {who} spends its time: {stacks['message']}")
    return out + _nccl_lines(job.get("nccl")) + _rank_lines(job.get("rank_figures") or [], straggler)


RANK_LINES = 24  # of a large job, the worst ranks are listed; the JSON has them all


def _rank_lines(ranks: list[dict[str, Any]], straggler: int | None) -> list[str]:
    """The ranks side by side: how much of its time each waits for the others, and what it does otherwise; with
    NCCL's RAS, every node's ranks with their state and how many collectives they lag, the worst first."""
    if len(ranks) < 2:
        return []
    nccl = any("nccl_state" in r for r in ranks)
    if nccl:  # worst first: dead or unresponsive, then the most behind
        ranks = sorted(ranks, key=lambda r: (r.get("nccl_state") in ("RUNNING", None), -(r.get("lag") or 0),
                                             r["rank"]))
    shown = ranks[:RANK_LINES]
    hosts = [printable(r["host"]) for r in shown]  # a remote label: control characters made visible first
    width = max(4, *(len(host) for host in hosts))
    extra = f"  {'NCCL':<12}  {'lag':>5}" if nccl else ""
    out = [f"  ranks: {'rank':>4}  {'host':<{width}}  {'pid':>7}{extra}  {'waits in collectives':<20}  busy at"]
    for r, host in zip(shown, hosts, strict=True):
        wait = f"{100 * r['collective']:.0f}%" if r["samples"] else "N/A"
        mark = " <- straggler" if straggler is not None and r["pid"] == straggler else ""
        cells = f"  {r.get('nccl_state') or '-':<12}  {'' if r.get('lag') is None else r['lag']:>5}" if nccl else ""
        out.append(f"         {r['rank']:>4}  {host:<{width}}  {r['pid'] or '':>7}{cells}  {wait + mark:<20}  "
                   f"{r['site'] or ''}".rstrip())
    if len(ranks) > len(shown):
        out.append(f"         ... and {len(ranks) - len(shown)} more ranks (--json lists them all)")
    return out


def render(seen: dict[tuple[str, str], Seen], facts: dict[str, Any], seconds: float) -> str:
    """The findings as text, one printable line each: evidence quoting a command line cannot forge a line."""
    workload = facts.get("workload")
    head = f"hwtop doctor: {facts['ticks']} samples over {seconds:g} s on {facts.get('host') or 'this host'}, " \
           f"{facts.get('gpus', 0)} GPU(s)"
    if workload:
        head += f", workload {workload['scenario']} ({workload['status']})"
    out = [head]
    if facts.get("gpu_message"):
        out.append(f"  GPUs: {facts['gpu_message']}")
    if facts.get("job"):
        straggler = next((e.finding.pids[0] for e in seen.values() if e.finding.id == rank_straggler.id and
                          e.active and e.finding.pids), None)
        out += _job_lines(facts["job"], straggler)
    if not seen:
        out.append("No problems seen.")
    for entry in sorted(seen.values(), key=lambda e: (e.finding.severity_order, e.finding.id, e.finding.scope)):
        f = entry.finding
        state = "active" if entry.active else f"cleared (seen for {entry.last - entry.first:.0f} s)"
        if entry.active and f.clearing(entry.last) and f.held_at is not None:  # shown, but no longer holding
            state = f"clearing: not seen for {entry.last - f.held_at:.0f} s, its figures as of {clock(f.held_at)}"
        out.append("")
        out.append(f"[{f.severity.upper()}] {f.title}" + (f" · {f.scope}" if f.scope else "") + f"  ({f.id}, {state})")
        out += [f"  seen: {line}" for line in f.evidence]
        out += [f"  fix:  {line}" for line in f.fix]
    for rule, message in sorted(facts.get("rule_errors", {}).items()):
        out.append(f"rule {rule} failed: {message}")
    out += timeline_lines(facts.get("timeline", []))
    return printable_lines(out)


def timeline_lines(changes: list[dict[str, Any]]) -> list[str]:
    """What was raised and cleared while doctor watched, with times: the story behind the findings above."""
    from hwtop.advice.timeline import describe
    from hwtop.model.finding import Change

    if not changes:
        return ["", "What changed: nothing was raised or cleared."]
    return ["", "What changed:", *(f"  {describe(Change(**change))}" for change in changes)]


def crash_lines(workload: dict[str, Any]) -> list[str]:
    """What a crashed workload left to say: which rank failed with which exit code, then its last stderr lines.
    Empty when it did not crash."""
    if workload.get("status") != "crashed":
        return []
    tail = [line for line in workload.get("stderr_tail") or [] if line.strip()]
    failed = next((m for m in map(_RANK_EXIT.search, reversed(tail)) if m), None)
    if failed is not None:
        rank, pid, code = failed.groups()
        head = f"hwtop doctor: the workload crashed: rank {rank} (pid {pid}) exited with code {code}"
    else:
        head = f"hwtop doctor: the workload crashed: exit code {workload.get('exit_code')}"
    if not tail:
        return [head, "  (it wrote nothing to stderr)"]
    return [head, "  its last stderr lines:", *(f"    {line}" for line in tail)]


def doctor_command(sampler: Any, thresholds: Thresholds, seconds: float, interval: float,
                   job_args: list[str] | None, as_json: bool) -> int:
    with StopSignals() as stop:
        try:
            seen, facts = run_doctor(sampler, thresholds, seconds, interval, job_args, stop)
        finally:
            sampler.close()
    if facts.get("stopped"):  # ctrl-c, SIGTERM or SIGHUP: no report from a watch cut short
        past_the_caret = "\n" if stop.signum == signal.SIGINT else ""  # the terminal echoed ^C
        print(f"{past_the_caret}hwtop doctor: stopped before the watch ended; no report", file=sys.stderr)
        return 130
    workload = facts.get("workload")
    if workload and workload["status"] == "crashed" and workload["exit_code"] == 2:
        tail = workload["stderr_tail"][-1] if workload["stderr_tail"] else "bad workload options"
        print(printable(f"hwtop: error: workload: {tail}"), file=sys.stderr)
        return 2
    crash = crash_lines(workload) if workload else []
    if as_json:
        print(json.dumps({"seconds": seconds, **facts, "findings": [
            {**e.finding.to_dict(), "active": e.active, "first_seen": e.first, "last_seen": e.last}
            for e in sorted(seen.values(), key=lambda e: (e.finding.severity_order, e.finding.id, e.finding.scope))]},
            indent=2))
    else:
        print(render(seen, facts, seconds))
    if crash:
        print(printable_lines(crash), file=sys.stderr)
        return EXIT_CRASHED
    return 1 if any(e.finding.severity in ("warning", "critical") for e in seen.values()) else 0
