"""`hwtop doctor`: sample this box (optionally while the embedded job runs, or watching a running job named
by --pid/--job), run the advice rules, print the findings. Exit 0 when nothing at warning or above was seen, 1
when something was, 2 for bad usage (a pid that does not exist, is not Python, or may not be inspected), 3 when
the embedded workload crashed (the failed rank's exit code and its last stderr lines go to stderr).

As `hwtop report` is: facts, then checks, then render. The session is built as the monitor's is (cli/machine.py)
and driven through its controls (the workload started and stopped, the job's last stack samples); the watch
(watch.py) ticks it, the findings shown are tracked by advice/timeline.py and settled at the end with the whole
watch's samples (findings.py); facts.py makes the typed facts of the last look, render.py the text or the JSON."""

from __future__ import annotations

import argparse
import json
import signal
import sys

import msgspec.structs

from hwtop.cli.doctor.facts import JobFacts, box_facts, job_facts, workload_facts
from hwtop.cli.doctor.findings import Reported, reported, settle, with_samples
from hwtop.cli.doctor.render import Report, as_json, crash_lines, report, text
from hwtop.cli.doctor.watch import Watch, run_watch
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
from hwtop.model.safe_text import printable, printable_lines
from hwtop.probes.nccl_ras.manners import DEFAULT_INTERVAL_S
from hwtop.session.controls import ControlRefused
from hwtop.session.session import Session
from hwtop.session.sources import JobRefused

EXIT_CRASHED = 3
EXIT_STOPPED = 130


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
    doctor.add_argument("--fr-dump", action="store_true",
                        help="with --pid/--job: once the job's ranks are seen, ask each for its PyTorch Flight "
                             "Recorder dump through the pipe its TORCH_NCCL_DEBUG_INFO_PIPE_FILE names, and say what "
                             "became of each (never without this option)")
    doctor.add_argument("--workload", metavar="KIND", choices=WORKLOAD_KINDS,
                        help=f"run the embedded job of this kind meanwhile: {', '.join(WORKLOAD_KINDS)} (needs "
                             "torch)")
    add_source_options(doctor, "seconds between samples (default 1)", sub=True)


def run(call: Invocation) -> int:
    """The job to watch (--pid/--job, checked strictly: doctor's answer is about it) or to run (--workload, with
    the options doctor does not know), then doctor_command."""
    args, extra = call.args, call.extra
    if args.fr_dump and not (getattr(args, "pid", None) or getattr(args, "job", None)):
        call.parser.error("--fr-dump asks a running job's ranks for their Flight Recorder dumps: it needs --pid or "
                          "--job")
    job_args = None
    if args.seconds is None:  # --workload with --pid or --job was refused by check_exclusive
        args.seconds = 20.0 if args.pid or args.job else 10.0
    if args.workload is not None:
        job_args = ["--scenario", args.workload, *extra]
        if "--steps" not in extra and "--seconds" not in extra:
            job_args += ["--seconds", str(args.seconds + 60)]  # outlives the sampling; stopped when it ends
    sources = source_config(args, strict=True, workload_stacks=True)
    try:
        sampler = open_sampler(sources)
    except JobRefused as refused:
        print(f"hwtop: error: {refused}", file=sys.stderr)
        return 2
    return doctor_command(Session(sampler, call.config.thresholds), args.seconds, args.interval, job_args, args.json,
                          sources.nccl_ras.interval_s, args.fr_dump)


def doctor_command(session: Session, seconds: float, interval: float, job_args: list[str] | None, as_json: bool,
                   nccl_interval_s: float = DEFAULT_INTERVAL_S, fr_dump: bool = False) -> int:
    """Watches, then prints the report; the exit status. The session is closed whatever happens."""
    with StopSignals() as stop:
        try:
            done = run_doctor(session, seconds, interval, job_args, stop, nccl_interval_s, fr_dump)
        except ControlRefused as refused:  # the workload cannot start (torch missing)
            print(f"hwtop: error: {refused}", file=sys.stderr)
            return 2
        finally:
            session.close()
    if done is None:  # ctrl-c, SIGTERM or SIGHUP: no report from a watch cut short
        past_the_caret = "\n" if stop.signum == signal.SIGINT else ""  # the terminal echoed ^C
        print(f"{past_the_caret}hwtop doctor: stopped before the watch ended; no report", file=sys.stderr)
        return EXIT_STOPPED
    return print_report(done, as_json)


def print_report(done: Report, as_json_: bool) -> int:
    workload = done.facts.workload
    if workload is not None and workload.status == "crashed" and workload.exit_code == 2:  # the job's bad usage
        tail = workload.stderr_tail[-1] if workload.stderr_tail else "bad workload options"
        print(printable(f"hwtop: error: workload: {tail}"), file=sys.stderr)
        return 2
    print(json.dumps(as_json(done), indent=2) if as_json_ else text(done))
    crash = crash_lines(workload) if workload is not None else []
    if crash:
        print(printable_lines(crash), file=sys.stderr)
        return EXIT_CRASHED
    return 1 if done.warns else 0


def run_doctor(session: Session, seconds: float, interval: float, job_args: list[str] | None,
               stop: StopSignals | None = None, nccl_interval_s: float = DEFAULT_INTERVAL_S,
               fr_dump: bool = False) -> Report | None:
    """Starts the workload of `job_args` through the session's control, watches for `seconds` (after its first
    step), and makes the report; None when `stop` was asked first. The workload is stopped at the end. `fr_dump`:
    the job's ranks are asked for their Flight Recorder dumps once, as soon as they are seen (--fr-dump)."""
    stop = stop or StopSignals()  # not entered: never asked
    workload = session.workload
    if job_args is not None and workload is not None:
        workload.start(job_args)  # from its first step, its job is watched as --pid watches one
    try:
        seen = run_watch(session, seconds, interval, stop, job_args is not None, nccl_interval_s, fr_dump)
        if seen.stopped or seen.frame is None:
            return None
        findings, job = last_look(session, seen)
    finally:
        if workload is not None:
            workload.stop()
    frame = seen.frame
    state = frame.snapshot.workload
    stderr_tail = workload.last_stderr() if workload is not None and state is not None and \
        state.status == "crashed" else ()
    facts = box_facts(seen.ticks, frame.snapshot, frame.rule_errors, frame.timeline, job,
                      workload_facts(state, stderr_tail), seen.fr_dump)
    return report(seconds, facts, findings.values())


def last_look(session: Session, seen: Watch) -> tuple[dict[tuple[str, str], Reported], JobFacts | None]:
    """The findings shown, settled with the whole watch's stack samples when the job still runs (its sampling
    ends), and the job's facts: its last live view with those samples, and how it stands now."""
    findings = reported(seen.timeline.shown)
    last = seen.frame.snapshot if seen.frame is not None else None
    if last is None or last.job is None:
        return findings, None
    shown = seen.last_running or last.job  # an ended job's last live view, with how it ended
    watched_s = last.time - (seen.job_since or last.time)
    final = session.finish_stacks() if last.job.status == "running" else None
    if final is not None:
        from hwtop.probes.job import with_stacks
        from hwtop.probes.stack_sampler import WINDOW_S as STACK_WINDOW_S

        shown = msgspec.structs.replace(shown, stacks=final, ranks=with_stacks(shown.ranks, final))
        findings = settle(seen.timeline.shown, seen.samples, session.engine, last, with_samples(last, final),
                          covers_the_watch=watched_s <= STACK_WINDOW_S)
    now = job_facts(last.job, 0.0)
    job = msgspec.structs.replace(job_facts(shown, watched_s, seen.verdicts), nccl_watch_s=seen.nccl_watch_s,
                                  status=now.status,
                                  message=now.message, exit_codes=now.exit_codes)
    return findings, job
