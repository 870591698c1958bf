"""The `hwtop` command line: the parser, then a dispatch table of commands, one module each (cli/<command>.py, its
options and its run); `hwtop` with no command is the monitor (cli/monitor.py). A command's module is imported only
when the command line names it, so the monitor's start and `hwtop snapshot --json` never load the others. Exit
status: 0 done, 2 bad usage (one line), 1 a crash anywhere, in any command (one line and a saved traceback:
cli.crash), 141 when the reader of stdout closed it (`| head`: cli.closed_pipe)."""

from __future__ import annotations

import argparse
import gc
import importlib
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

from hwtop import __version__
from hwtop.cli import monitor
from hwtop.cli.machine import check_demo, make_sampler
from hwtop.cli.options import Command, Invocation, OneLineParser, check_exclusive

# make_sampler too: scripts and tests build a machine as the command line does (screenshots/, tests/).
__all__ = ["COMMANDS", "build_parser", "main", "make_sampler", "run_command"]

# The subcommands as `hwtop --help` lists them, with a line of help each; `name` runs hwtop.cli.<name>.
COMMANDS: dict[str, str] = {
    "snapshot": "take two samples SECONDS apart and print one snapshot",
    "topo": "GPU/NIC connection matrix, NUMA layout and link health",
    "doctor": "sample for a while, run the advice rules, print the findings (exit 1 if any warning)",
    "record": "write one snapshot per tick to FILE (JSON lines; gzip if .gz)",
    "replay": "the monitor driven by a recording: pause, step, seek, speed",
    "export": "serve Prometheus metrics (dcgm-exporter names for GPUs) on 127.0.0.1:9400",
    "fleet": "one row per host, worst first, from their exporters or from Prometheus",
    "report": "grade this box for PyTorch training; what a given model needs (--params)",
    "workload": "run the embedded PyTorch DDP/AMP job headless and print its telemetry (needs torch; options: "
                "hwtop workload --help)",
}
# Commands whose arguments go to a parser of their own (the job's, beside torch): no options, no -h here.
OWN_PARSER = frozenset({"workload"})

if TYPE_CHECKING:  # what `command` casts, checked: each module of the table is a Command
    from hwtop.cli import doctor, export, fleet, record, replay, report, snapshot, topo

    _MODULES: tuple[Command, ...] = (snapshot, topo, doctor, record, replay, export, fleet, report, monitor)


def command(name: str) -> Command:
    """The module of command `name` (hwtop.cli.<name>), imported now."""
    return cast(Command, importlib.import_module(f"hwtop.cli.{name}"))


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The whole command line when argv is None; else the subcommands that argv names get their options and the
    others only their name and line of help (what `hwtop --help` and a mistyped command need): the monitor's start
    names none and skips their add_argument calls and modules (benchmarks/README.md has the figures)."""
    parser = OneLineParser(
        prog="hwtop",
        description="hwtop: what limits the training job on this box. GPUs (NVML), per-core CPU by NUMA node, "
                    "memory, disks and processes, live in the terminal.",
        epilog="Keys in the monitor: q quit, p pause, s sort processes, ? help. "
               "N/A means this machine cannot report a value.",
    )
    parser.add_argument("--version", action="version", version=f"hwtop {__version__}")
    monitor.add_options(parser)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser)
    for name, summary in COMMANDS.items():
        sub = commands.add_parser(name, help=summary, add_help=name not in OWN_PARSER)
        if name not in OWN_PARSER and (argv is None or name in argv):
            command(name).add_options(sub)
    return parser


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
        from hwtop.cli.workload import workload_command

        return workload_command(argv[1:])
    parser = build_parser(argv)
    args, extra = parser.parse_known_args(argv)
    if extra and not (args.command == "doctor" and args.workload):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    check_exclusive(parser, args)
    check_demo(parser, args)
    if args.command is None:
        # The monitor: no garbage collection until its first frame is drawn (GuardedApp.run): its imports and
        # first tick make many objects and little garbage, and the collector's passes over them are wasted.
        gc.disable()
    from hwtop.session.config import load as load_file_config

    try:
        config = load_file_config(args.config)
    except ValueError as error:
        parser.error(str(error))
    if "--interval" not in argv and config.interval is not None:
        args.interval = config.interval
    call = Invocation(parser, args, extra, argv, config)
    return monitor.run(call) if args.command is None else command(args.command).run(call)


if __name__ == "__main__":
    sys.exit(main())
