"""The `hwtop` command line. Imports stay lazy so `hwtop snapshot --json` never loads Textual. Exit status: 0
done, 2 bad usage (one line), 1 a crash anywhere, in any command (one line and a saved traceback: cli.crash), 141
when the reader of stdout closed it (`| head`: cli.closed_pipe)."""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import NoReturn

from hwtop import __version__
from hwtop.model.safe_text import printable

MAX_INTERVAL = 3600.0
SCENARIOS = ["balanced", "dataloader-bound", "amp-compare", "oom-ramp"]


class OneLineParser(argparse.ArgumentParser):
    """Bad input exits 2 with one line saying why (argparse's default prints the usage block too). The line
    often quotes what was given (a value, a pattern, a config value): its control characters are shown."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"hwtop: error: {printable(message)}\n")


def interval_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not (value > 0) or value > MAX_INTERVAL:
        raise argparse.ArgumentTypeError(f"must be more than 0 and at most {MAX_INTERVAL:g} seconds, got {text!r}")
    return value


def _add_source_options(parser: argparse.ArgumentParser, interval_help: str, sub: bool = False) -> None:
    # On a subcommand the defaults are suppressed, so `hwtop --demo X snapshot` keeps the X.
    default = (lambda value: argparse.SUPPRESS) if sub else (lambda value: value)
    parser.add_argument("--interval", type=interval_seconds, default=default(1.0), metavar="SECONDS",
                        help=interval_help)
    parser.add_argument("--demo", metavar="PROFILE", default=default(None),
                        help="run on a built-in machine (a faithful fake NVML) instead of this one; "
                             "'--demo list' names them")
    parser.add_argument("--scenario", metavar="NAME", default=default(None),
                        help="with --demo: play a scripted story on the demo machine (starved, nccl-hang, oom, amp, "
                             "thermal, straggler); same as --demo PROFILE:NAME")
    parser.add_argument("--no-gpu", action="store_true", default=default(False), help="do not probe GPUs at all")


def pid_number(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"a pid is a positive number, got {text!r}")
    return value


def _add_job_options(parser: argparse.ArgumentParser, sub: bool = False) -> None:
    default = argparse.SUPPRESS if sub else None
    parser.add_argument("--pid", type=pid_number, action="append", metavar="PID", default=default,
                        help="a running job: this process and all its descendants; a rank stands for its launcher's "
                             "whole job (repeatable)")
    parser.add_argument("--job", metavar="NAME_OR_PID", default=default,
                        help="a running job by pid, or by a regular expression over command lines (never hwtop "
                             "itself or its shell)")
    from hwtop.cli.nccl_ras_options import add_nccl_ras_options  # NCCL RAS (issue 42): re-apply after the split

    add_nccl_ras_options(parser, sub)


def offset_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be 0 or more seconds, got {text!r}")
    return value


# Options that contradict each other, with why: either one alone is fine, both is a mistake to say in one line.
EXCLUSIVE = (
    ("--demo", "--replay", "a recording brings its own machine"),
    ("--demo", "replay FILE", "a recording brings its own machine"),
    ("--pid", "--job", "each names the job to watch: give one of them"),
    ("--workload", "--pid", "watch the embedded job or a running one, not both"),
    ("--workload", "--job", "watch the embedded job or a running one, not both"),
    ("--workload", "replay FILE", "a replay only plays what was recorded"),
    ("--pid", "replay FILE", "a replay only plays what was recorded"),
    ("--pid", "--replay", "a replay only plays what was recorded"),
    ("--job", "--replay", "a replay only plays what was recorded"),
    ("--job", "replay FILE", "a replay only plays what was recorded"),
)


def given_options(args: argparse.Namespace) -> set[str]:
    """The options of EXCLUSIVE that this command line gave (by value: an abbreviation or `--x=v` counts)."""
    values = {"--demo": getattr(args, "demo", None) is not None, "--no-gpu": bool(getattr(args, "no_gpu", False)),
              "--pid": bool(getattr(args, "pid", None)), "--job": getattr(args, "job", None) is not None,
              "--workload": getattr(args, "workload", None) is not None,
              "--replay": getattr(args, "replay", None) is not None, "replay FILE": args.command == "replay"}
    return {name for name, given in values.items() if given}


def check_exclusive(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    given = given_options(args)
    for first, second, why in EXCLUSIVE:
        if first in given and second in given:
            parser.error(f"{first} and {second} cannot be used together: {why}")


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The whole command line when argv is None; else the subcommands that argv names get their options and the
    others only their name and line of help (what `hwtop --help` and a mistyped command need): the monitor's start
    names none and skips ~70 add_argument calls and two modules (~11 M instructions, 1 % of its first frame)."""
    parser = OneLineParser(
        prog="hwtop",
        description="hwtop: what limits the training job on this box. GPUs (NVML), per-core CPU by NUMA node, "
                    "memory, disks and processes, live in the terminal.",
        epilog="Keys in the monitor: q quit, p pause, s sort processes, ? help. "
               "N/A means this machine cannot report a value.",
    )
    parser.add_argument("--version", action="version", version=f"hwtop {__version__}")
    _add_source_options(parser, "refresh interval of the monitor (default 1)")
    parser.add_argument("--theme", choices=["dark", "light", "mono"], default=None,
                        help="colours: dark (default), light, mono (no colour; also when NO_COLOR is set)")
    parser.add_argument("--config", metavar="FILE", default=None,
                        help="config file (default ~/.config/hwtop/config.toml): [advice.thresholds] overrides")
    parser.add_argument("--workload", metavar="SCENARIO", choices=SCENARIOS,
                        help="start the embedded training job with this scenario (needs torch; w in the monitor)")
    _add_job_options(parser)
    parser.add_argument("--workload-device", choices=["cpu", "cuda"], default="cpu",
                        help="device of the --workload job (default cpu)")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser)
    for name, (summary, add_options) in COMMANDS.items():
        command = commands.add_parser(name, help=summary, add_help=add_options is not None)
        if add_options is not None and (argv is None or name in argv):
            add_options(command)
    return parser


def _snapshot_options(snap: argparse.ArgumentParser) -> None:
    snap.description = ("Take two samples --interval seconds apart (rates need two) and print one snapshot. Its "
                        "schema: docs/snapshot-schema.md.")
    snap.add_argument("--json", action="store_true", required=True, help="print the snapshot as JSON")
    snap.add_argument("--replay", metavar="FILE", help="take it from a recording instead of this machine")
    snap.add_argument("--at", type=offset_seconds, metavar="T",
                      help="with --replay: seconds from the recording's start (or a Unix time); default 0")
    _add_source_options(snap, "seconds between the two samples (default 1)", sub=True)


def _topo_options(topo: argparse.ArgumentParser) -> None:
    topo.description = ("The GPU and NIC connection matrix with CPU and NUMA affinity (as nvidia-smi topo -m), the "
                        "NUMA table (as numactl --hardware), and PCIe link health.")
    topo.add_argument("--json", action="store_true", help="print the same as JSON")
    _add_source_options(topo, "unused by topo", sub=True)


def _doctor_options(doctor: argparse.ArgumentParser) -> None:
    doctor.description = (
        "Sample this box for --seconds (optionally while an embedded scenario runs, or watching a running job: "
        "--pid PID, --job NAME_OR_PID), apply the advice rules and print each finding with its evidence and fix. "
        "Exit 0: nothing at warning or above; 1: something was found; 2: bad usage (a pid that does not exist, is "
        "not Python, or may not be inspected); 3: the --workload crashed (its failed rank's exit code and last "
        "stderr lines on stderr). Options after --workload SCENARIO that doctor does not know go to the job "
        "(hwtop workload --help).")
    doctor.add_argument("--seconds", type=interval_seconds, default=None,
                        help="how long to sample (default 10; 20 with --pid/--job, as stack samples take time)")
    _add_job_options(doctor, sub=True)
    doctor.add_argument("--json", action="store_true", help="print the findings as JSON")
    doctor.add_argument("--workload", metavar="SCENARIO", choices=SCENARIOS,
                        help="run the embedded job with this scenario meanwhile (needs torch)")
    _add_source_options(doctor, "seconds between samples (default 1)", sub=True)


def _record_options(record: argparse.ArgumentParser) -> None:
    record.description = ("Append one snapshot per --interval to FILE, after a header line, until ctrl-c, SIGTERM "
                          "or --seconds. Each line is flushed as it is written: a killed recorder loses at most its "
                          "last tick. hwtop replay FILE plays it.")
    record.add_argument("file", metavar="FILE")
    record.add_argument("--seconds", type=interval_seconds, metavar="S", help="stop after S seconds")
    _add_source_options(record, "seconds between snapshots (default 1)", sub=True)


def _replay_options(replay: argparse.ArgumentParser) -> None:
    replay.description = ("The whole monitor, driven by FILE; the advice pane re-evaluates as it plays. Keys: p "
                          "pause, . , step, ] [ seek 10 s, + - speed.")
    replay.add_argument("file", metavar="FILE")
    replay.add_argument("--speed", type=interval_seconds, default=1.0, metavar="X",
                        help="playback speed (default 1: real time)")
    _add_source_options(replay, "refresh interval of the playback (default: the recording's)", sub=True)


def _export_options(export: argparse.ArgumentParser) -> None:
    from hwtop.cli.export import add_options

    add_options(export, _add_source_options)
    _add_job_options(export, sub=True)
    export.add_argument("--job-name", metavar="NAME", default=None,
                        help="with --pid/--job: the job_name label of the job's rank series (default: the --job "
                             "pattern, else 'pid N'); give every node's exporter the same one")


def _fleet_options(fleet: argparse.ArgumentParser) -> None:
    fleet.description = (
        "Read the exporters at URL... (host:port or http://host:port/metrics; hwtop export or NVIDIA's "
        "dcgm-exporter), or a Prometheus server (--prometheus) that scrapes them (dcgm-exporter and node-exporter "
        "series work too), every --interval; one row per host, worst first; enter opens its GPUs. A host that does "
        "not answer within --timeout is shown as such and retried.")
    fleet.add_argument("urls", nargs="*", metavar="URL")
    fleet.add_argument("--file", metavar="FILE", help="more URLs, one per line (# comments)")
    fleet.add_argument("--prometheus", metavar="URL", help="read the fleet from this Prometheus server's HTTP API")
    fleet.add_argument("--selector", metavar="{LABEL=\"VALUE\",...}", default="",
                       help="with --prometheus: only series matching these label matchers, e.g. '{job=\"train\"}'")
    fleet.add_argument("--timeout", type=interval_seconds, default=3.0, metavar="SECONDS",
                       help="deadline of each request (default 3)")
    fleet.add_argument("--job", metavar="NAME", default=None,
                       help="with --prometheus: every rank of this job (the job_name of its hosts' 'hwtop export "
                            "--job'), worst first, the straggler or the hang named with its host's top finding")
    fleet.add_argument("--rank-window", type=interval_seconds, default=60.0, metavar="SECONDS",
                       help="with --job: the span the ranks' shares are taken over (default 60)")
    fleet.add_argument("--json", action="store_true",
                       help="read one round, print the hosts (and the --job view; through Prometheus without "
                            "--job, its jobs) as JSON and exit: 0 read, 1 Prometheus or every exporter did not "
                            "answer")
    _add_source_options(fleet, "seconds between rounds (default 1)", sub=True)


def _report_options(report: argparse.ArgumentParser) -> None:
    from hwtop.cli.report import add_options

    add_options(report, _add_source_options)


# The subcommands as `hwtop --help` lists them: a line of help each, and what adds the rest of its parser (None:
# `workload` hands its arguments to the job's own parser).
COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None] | None]] = {
    "snapshot": ("take two samples SECONDS apart and print one snapshot", _snapshot_options),
    "topo": ("GPU/NIC connection matrix, NUMA layout and link health", _topo_options),
    "doctor": ("sample for a while, run the advice rules, print the findings (exit 1 if any warning)",
               _doctor_options),
    "record": ("write one snapshot per tick to FILE (JSON lines; gzip if .gz)", _record_options),
    "replay": ("the monitor driven by a recording: pause, step, seek, speed", _replay_options),
    "export": ("serve Prometheus metrics (dcgm-exporter names for GPUs) on 127.0.0.1:9400", _export_options),
    "fleet": ("one row per host, worst first, from their exporters or from Prometheus", _fleet_options),
    "report": ("grade this box for PyTorch training; what a given model needs (--params)", _report_options),
    "workload": ("run the embedded PyTorch DDP/AMP job headless and print its telemetry (needs torch; options: "
                 "hwtop workload --help)", None),
}


def make_sampler(demo: str | None, no_gpu: bool):  # -> Sampler
    from hwtop.probes.gpu import NvmlProbe
    from hwtop.session.sampler import Sampler
    if demo is not None:  # a whole simulated machine: nothing of this host is read
        from hwtop.demo.machine import demo_sampler

        sampler = demo_sampler(demo)
        if no_gpu:
            sampler.gpu = None
        return sampler
    if no_gpu:
        return Sampler(gpu=None)
    probe = NvmlProbe()
    return Sampler(gpu=probe, topology_reader=probe.machine_topology)


def _check_demo(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Validates --demo (and folds --scenario into it: `--demo P --scenario S` is `--demo P:S`)."""
    demo, scenario = getattr(args, "demo", None), getattr(args, "scenario", None)
    if demo is None:
        if scenario is not None:
            parser.error("--scenario needs --demo PROFILE")
        return
    from hwtop.demo.machine import split_story
    from hwtop.demo.scenarios import listing, split

    if demo == "list":
        print("\n".join(listing()))
        sys.exit(0)
    real = [flag for flag, value in (("--pid", getattr(args, "pid", None)), ("--job", getattr(args, "job", None)),
                                     ("--workload", getattr(args, "workload", None))) if value]
    if real:
        parser.error(f"{', '.join(real)} watch this machine's processes; a --demo machine has its own job "
                     "(--scenario plays a story on it)")
    try:
        split(demo)  # PROFILE or PROFILE:SCENARIO
        spec, story = split_story(demo, scenario)
    except KeyError as error:
        parser.error(str(error.args[0]))
    if story is not None:
        if ":" in spec:
            parser.error("--scenario plays on a plain profile, not on a driver scenario such as " + spec)
        args.demo = f"{spec}:{story}"
    from hwtop.demo.nvml import coverage

    if (outside := coverage.note(coverage.installed())) is not None:  # every command a demo machine drives
        print(f"hwtop: {outside}", file=sys.stderr)


def workload_help() -> int:
    """The job's own options (its parser lives beside torch, in the job's process), then hwtop's one option."""
    import subprocess

    from hwtop.workload.launcher import JOB_MODULE, job_environment

    shown = subprocess.run([sys.executable, "-P", "-m", JOB_MODULE, "--help"], env=job_environment(),
                           stdin=subprocess.DEVNULL, check=False)
    print("\nhwtop workload also takes --json: each telemetry record as one JSON line.")
    return shown.returncode


def workload_command(argv: list[str]) -> int:
    """`hwtop workload [job options] [--json]`: run the job headless, print its telemetry, stop it whole on
    SIGINT/SIGTERM/SIGHUP. The job's own parser checks its options (bad ones exit 2)."""
    import signal

    from hwtop.workload.launcher import WorkloadProcess, describe, torch_missing

    missing = torch_missing()
    if missing:
        print(f"hwtop: error: {missing}", file=sys.stderr)
        return 2
    as_json = "--json" in argv
    job_args = [a for a in argv if a != "--json"]
    if "-h" in job_args or "--help" in job_args:
        return workload_help()
    job = WorkloadProcess(job_args)

    def stop(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, stop)
    try:
        for record in job.records():
            print(_json(record) if as_json else printable(describe(record)), flush=True)
        code = job.wait()
    except KeyboardInterrupt:
        job.stop()
        return 130
    finally:
        job.stop(grace_s=2.0)
    if code != 0:
        tail = job.stderr_tail[-1] if job.stderr_tail else "no error output"
        # 2 is the job's argument parser refusing an option: its line already says which and why
        print(printable(tail if code == 2 else f"hwtop: workload exited with {code}: {tail}"), file=sys.stderr)
        return 2 if code == 2 else 1
    return 0


def main(argv: list[str] | None = None) -> int:
    """Runs one command. An exception nothing else handled, here or in the monitor (whose app raises it once the
    terminal is restored), ends with one line on stderr, the traceback saved to a private file, and status 1.
    Meanwhile every stderr line is made printable (cli.plain_stderr): log lines quote paths and others' words."""
    from hwtop.cli.plain_stderr import printable_stderr

    with printable_stderr():
        try:
            return run_command(sys.argv[1:] if argv is None else argv)
        except KeyboardInterrupt:
            return 130
        except Exception as error:  # noqa: BLE001 - the last line of defence: reported, never a bare traceback
            from hwtop.cli.closed_pipe import quiet_exit, stdout_reader_gone

            if isinstance(error, BrokenPipeError) and stdout_reader_gone():  # `| head`: the reader has had enough
                return quiet_exit()
            from hwtop.cli.crash import report_crash

            return report_crash(error)
        finally:
            gc.enable()  # off for the monitor's start (run_command), whichever way that start ended


def run_command(argv: list[str]) -> int:
    if argv[:1] == ["workload"]:
        return workload_command(argv[1:])
    parser = build_parser(argv)
    args, extra = parser.parse_known_args(argv)
    if extra and not (args.command == "doctor" and args.workload):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    check_exclusive(parser, args)
    _check_demo(parser, args)
    if args.command is None:
        # The monitor: no garbage collection until its first frame is drawn (GuardedApp.run): its imports and
        # first tick make ~70,000 objects and little garbage, and the collector's passes over them are wasted.
        gc.disable()
    from hwtop.session.config import load as load_file_config

    try:
        config = load_file_config(args.config)
    except ValueError as error:
        parser.error(str(error))
    thresholds = config.thresholds
    if "--interval" not in argv and config.interval is not None:
        args.interval = config.interval
    theme = args.theme or config.theme or ("mono" if os.environ.get("NO_COLOR") is not None else "dark")
    if args.command == "doctor":
        return doctor(args, extra, thresholds)
    if args.command == "record":
        from hwtop.cli.record import record_command

        return record_command(args, make_sampler, thresholds)
    if args.command == "replay":
        from hwtop.cli.record import replay_command

        args.interval_given = "--interval" in argv
        return replay_command(args)
    if args.command == "fleet":
        return fleet_command(args, parser, thresholds)
    if args.command == "export":
        from hwtop.cli.export import export_command

        return export_command(args, make_sampler, thresholds)
    if args.command == "report":
        from hwtop.cli.report import report_command

        return report_command(args, parser)
    if args.command == "snapshot":
        return snapshot_command(args)
    if args.command == "topo":
        from hwtop.cli.topo import topo_command

        return topo_command(args.demo, args.json)
    job_probe = None
    if args.pid or args.job:
        from hwtop.probes.job import JobError, JobProbe

        try:
            job_probe = JobProbe(roots=tuple(args.pid or ()), pattern=args.job, sample_stacks=True)
            job_probe.check()
        except JobError as error:
            parser.error(str(error))
    sampler = make_sampler(args.demo, args.no_gpu)
    if job_probe is not None:  # a demo story about the ranks brings its own focused job
        sampler.job = job_probe  # closed with the sampler (its stack sampler's py-spy children)
        from hwtop.cli.nccl_ras_options import apply_nccl_ras  # NCCL RAS (issue 42): re-apply after the split

        apply_nccl_ras(args, sampler)
    try:
        # The first sample is taken while Textual is still to be imported (0.1-0.3 s); the first tick, after it,
        # before the app runs. The first frame then shows CPU %, disk and process rates, drawn at once rather
        # than after a frame of empty panels and a tick on the worker thread.
        sampler.sample()
        from hwtop.tui.app import HwtopApp  # after the checks: a bad --pid or --job is refused at once
        workload_args = None
        if args.workload is not None:
            workload_args = ["--scenario", args.workload, "--device", args.workload_device, "--seconds", "600"]
        app = HwtopApp(sampler, interval=args.interval, workload_args=workload_args, exit_on_signals=True,
                       thresholds=thresholds, open_job=job_probe is not None, theme=theme, hide=config.hide)
        app.tick_before_run()
        app.run()
    except KeyboardInterrupt:
        pass
    finally:
        sampler.close()
    return 0


def fleet_command(args: argparse.Namespace, parser: argparse.ArgumentParser, thresholds) -> int:  # noqa: ANN001
    from hwtop.fleet.sources import DirectSource, FleetSource, PrometheusSource
    from hwtop.fleet.targets import merge, prometheus_url, selector_matchers

    targets = list(args.urls)
    if args.file:
        try:
            with open(args.file, encoding="utf-8") as handle:
                targets += [line.split("#")[0].strip() for line in handle if line.split("#")[0].strip()]
        except (OSError, UnicodeDecodeError) as error:
            parser.error(f"cannot read {args.file}: {getattr(error, 'strerror', None) or error}")
    interval = max(args.interval, 1.0)
    source: FleetSource
    try:
        if args.prometheus is not None:
            if targets:
                parser.error("give exporter URLs or --prometheus, not both")
            source = PrometheusSource(prometheus_url(args.prometheus), selector_matchers(args.selector or "{}"),
                                      interval=interval, timeout=args.timeout, job=args.job,
                                      job_window_s=args.rank_window, thresholds=thresholds)
        else:
            if args.selector:
                parser.error("--selector needs --prometheus URL")
            if args.job is not None:
                parser.error("--job reads the job's ranks through Prometheus: it needs --prometheus URL")
            if not targets:
                parser.error("fleet needs at least one exporter URL (or --file, or --prometheus URL)")
            merged = merge(targets)
            for warning in merged.warnings:
                print(f"hwtop: warning: {warning}", file=sys.stderr)
            source = DirectSource(list(merged.urls), interval=interval, timeout=args.timeout,
                                  warnings=list(merged.warnings))
    except ValueError as error:
        parser.error(str(error))
    if args.json:
        from hwtop.cli.fleet_json import fleet_json

        try:
            return fleet_json(source, args.timeout)
        finally:
            source.close()
    from hwtop.tui.fleet_app import FleetApp

    try:
        FleetApp(source).run()
    except KeyboardInterrupt:
        pass
    finally:
        source.close()
    return 0


def doctor(args: argparse.Namespace, extra: list[str], thresholds) -> int:  # noqa: ANN001
    from hwtop.cli.doctor import doctor_command

    job_args = None
    job_probe = None
    if args.pid or args.job:  # --workload with either was refused by check_exclusive
        from hwtop.probes.job import JobError, JobProbe

        try:
            job_probe = JobProbe(roots=tuple(args.pid or ()), pattern=args.job, sample_stacks=True)
            job_probe.check(strict=True)
        except JobError as error:
            print(f"hwtop: error: {error}", file=sys.stderr)
            return 2
    if args.seconds is None:
        args.seconds = 20.0 if job_probe is not None else 10.0
    if args.workload is not None:
        from hwtop.workload.launcher import torch_missing

        missing = torch_missing()
        if missing:
            print(f"hwtop: error: {missing}", file=sys.stderr)
            return 2
        job_args = ["--scenario", args.workload, *extra]
        if "--steps" not in extra and "--seconds" not in extra:
            job_args += ["--seconds", str(args.seconds + 60)]  # outlives the sampling; stopped when it ends
    sampler = make_sampler(args.demo, args.no_gpu)
    if job_probe is not None:
        sampler.job = job_probe
        from hwtop.cli.nccl_ras_options import apply_nccl_ras  # NCCL RAS (issue 42): re-apply after the split

        apply_nccl_ras(args, sampler)
    return doctor_command(sampler, thresholds, args.seconds, args.interval, job_args, args.json)


def snapshot_command(args: argparse.Namespace) -> int:
    if args.replay is not None:
        from hwtop.cli.record import snapshot_at_command

        args.at = args.at or 0.0
        return snapshot_at_command(args)
    if args.at is not None:
        print("hwtop: error: --at needs --replay FILE", file=sys.stderr)
        return 2
    sampler = make_sampler(args.demo, args.no_gpu)
    try:
        sampler.sample()
        time.sleep(args.interval)
        snapshot = sampler.sample()
    finally:
        sampler.close()
    print(snapshot.to_json(indent=2))
    return 0


def _json(record: object) -> str:
    import json  # not on the monitor's start path

    return json.dumps(record)


if __name__ == "__main__":
    sys.exit(main())
