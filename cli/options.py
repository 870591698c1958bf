"""What every command's parser shares: the one-line error, the option types, the source and job options, the
options that contradict each other, and what a command's run is given (Invocation). Loaded at every start, so it
imports nothing a command does not need."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING, NoReturn, Protocol

from hwtop.model.safe_text import printable
from hwtop.workload.kinds import KINDS

if TYPE_CHECKING:  # the config is loaded after parsing: `hwtop --help` never reads it
    from hwtop.session.config import Config
    from hwtop.session.sources import SourceConfig

MAX_INTERVAL = 3600.0
# The embedded workload's kinds (workload/kinds.py, the job's own list). Apart from the demo's stories
# (--scenario NAME) and driver variants (--demo PROFILE:VARIANT).
WORKLOAD_KINDS = list(KINDS)
# The demo's profiles and stories as the help names them: demo/profiles.py's PROFILES and demo/story.py's STORIES
# and SCALE_STORIES (every story `--demo list` names), which a start without --demo does not load
# (tests/cli/test_help_lists.py holds them equal).
PROFILE_NAMES = ("gtx1660s", "rtx3050", "rtx3090", "ws-2x3090", "a4000", "dgx-a100", "h100-pcie", "h200", "h200-vm")
STORY_NAMES = ("starved", "nccl-hang", "oom", "amp", "thermal", "straggler", "nccl-ethernet", "straggler-256")


class OneLineParser(argparse.ArgumentParser):
    """Bad input exits 2 with one line saying why (argparse's default prints the usage block too). The line
    often quotes what was given (a value, a pattern, a config value): its control characters are shown."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"hwtop: error: {printable(message)}\n")


class Invocation:
    """What a command's run is given: the parser (for its one-line errors), the parsed options, the arguments the
    parser left (doctor --workload hands them to the job), the command line itself and the config file."""

    __slots__ = ("args", "argv", "config", "extra", "parser")

    def __init__(self, parser: argparse.ArgumentParser, args: argparse.Namespace, extra: list[str],
                 argv: Sequence[str], config: Config) -> None:
        self.parser, self.args, self.extra, self.argv, self.config = parser, args, extra, argv, config


class Command(Protocol):
    """A command's module (cli/<command>.py): the options of its parser, and its run (the exit status)."""

    def add_options(self, parser: argparse.ArgumentParser, /) -> None: ...

    def run(self, call: Invocation, /) -> int: ...


def interval_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not (value > 0) or value > MAX_INTERVAL:
        raise argparse.ArgumentTypeError(f"must be more than 0 and at most {MAX_INTERVAL:g} seconds, got {text!r}")
    return value


def offset_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be 0 or more seconds, got {text!r}")
    return value


def pid_number(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"a pid is a positive number, got {text!r}")
    return value


def add_source_options(parser: argparse.ArgumentParser, interval_help: str, sub: bool = False,
                       refused: bool = False) -> None:
    """--interval, and the machine to read: this one, a --demo one (with a --scenario story), or no GPUs. With
    `refused`, a command that reads no machine of its own (fleet, replay) parses the last three unlisted, for
    check_exclusive to refuse them with a reason."""
    # On a subcommand the defaults are suppressed, so `hwtop --demo X snapshot` keeps the X.
    default = (lambda value: argparse.SUPPRESS) if sub else (lambda value: value)
    shown = (lambda text: argparse.SUPPRESS) if refused else (lambda text: text)
    parser.add_argument("--interval", type=interval_seconds, default=default(1.0), metavar="SECONDS",
                        help=interval_help)
    parser.add_argument("--demo", metavar="PROFILE", default=default(None),
                        help=shown(f"run on a built-in machine (a faithful fake NVML) instead of this one: "
                                   f"{', '.join(PROFILE_NAMES)}; '--demo list' describes each, and the driver "
                                   "variants (PROFILE:VARIANT)"))
    parser.add_argument("--scenario", metavar="NAME", default=default(None),
                        help=shown(f"with --demo: play a scripted story on the demo machine ({', '.join(STORY_NAMES)});"
                                   " same as --demo PROFILE:NAME"))
    parser.add_argument("--no-gpu", action="store_true", default=default(False),
                        help=shown("do not probe GPUs at all"))


def add_job_options(parser: argparse.ArgumentParser, sub: bool = False) -> None:
    """--pid and --job: a running job to watch."""
    default = argparse.SUPPRESS if sub else None
    parser.add_argument("--pid", type=pid_number, action="append", metavar="PID", default=default,
                        help="a running job: this process and all its descendants; a rank stands for its launcher's "
                             "whole job (repeatable)")
    parser.add_argument("--job", metavar="NAME_OR_PID", default=default,
                        help="a running job by pid, or by a regular expression over command lines (never hwtop "
                             "itself or its shell); slurm:ID, pod:NAME or container:NAME: every process of that "
                             "owner on this host")
    from hwtop.cli.nccl_ras_options import add_nccl_ras_options  # NCCL RAS

    add_nccl_ras_options(parser, sub)


def source_config(args: argparse.Namespace, strict: bool = False, host: str = "",
                  workload_stacks: bool = False) -> SourceConfig:
    """The machine and the job the options name, as the session is built from them (cli/machine.py's
    open_sampler). `strict`: a job that is not Python or cannot be inspected is refused too (doctor)."""
    from hwtop.cli.nccl_ras_options import nccl_ras_config
    from hwtop.session.sources import JobTarget, SourceConfig

    roots, pattern = tuple(getattr(args, "pid", None) or ()), getattr(args, "job", None)
    job = JobTarget(roots, pattern, host, strict) if roots or pattern else None
    return SourceConfig(getattr(args, "demo", None), not getattr(args, "no_gpu", False), job,
                        nccl_ras_config(args), workload_stacks)


# Options that contradict each other, with why: either one alone is fine, both is a mistake to say in one line.
EXCLUSIVE = (
    ("--demo", "--replay", "a recording brings its own machine"),
    ("--demo", "replay FILE", "a recording brings its own machine"),
    ("--scenario", "replay FILE", "a recording brings its own machine"),
    ("--no-gpu", "replay FILE", "a recording brings its own machine"),
    ("--pid", "--job", "each names the job to watch: give one of them"),
    ("--workload", "--pid", "watch the embedded job or a running one, not both"),
    ("--workload", "--job", "watch the embedded job or a running one, not both"),
    ("--workload", "replay FILE", "a replay only plays what was recorded"),
    ("--pid", "replay FILE", "a replay only plays what was recorded"),
    ("--pid", "--replay", "a replay only plays what was recorded"),
    ("--job", "--replay", "a replay only plays what was recorded"),
    ("--job", "replay FILE", "a replay only plays what was recorded"),
    ("--demo", "fleet", "fleet shows the hosts its exporters or Prometheus report, no machine of its own"),
    ("--scenario", "fleet", "fleet shows the hosts its exporters or Prometheus report, no machine of its own"),
    ("--no-gpu", "fleet", "fleet shows the hosts its exporters or Prometheus report, no machine of its own"),
)


def given_options(args: argparse.Namespace) -> set[str]:
    """The options of EXCLUSIVE that this command line gave (by value: an abbreviation or `--x=v` counts)."""
    values = {"--demo": getattr(args, "demo", None) is not None, "--no-gpu": bool(getattr(args, "no_gpu", False)),
              "--scenario": getattr(args, "scenario", None) is not None,
              "--pid": bool(getattr(args, "pid", None)), "--job": getattr(args, "job", None) is not None,
              "--workload": getattr(args, "workload", None) is not None,
              "--replay": getattr(args, "replay", None) is not None, "replay FILE": args.command == "replay",
              "fleet": args.command == "fleet"}
    return {name for name, given in values.items() if given}


def check_exclusive(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    given = given_options(args)
    for first, second, why in EXCLUSIVE:
        if first in given and second in given:
            parser.error(f"{first} and {second} cannot be used together: {why}")
