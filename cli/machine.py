"""The machine a command reads: this one, or a --demo one (checked, its --scenario story folded in)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hwtop.session.sampler import Sampler


def make_sampler(demo: str | None, no_gpu: bool) -> Sampler:
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


def check_demo(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Validates --demo (and folds --scenario into it: `--demo P --scenario S` is `--demo P:S`)."""
    demo, scenario = getattr(args, "demo", None), getattr(args, "scenario", None)
    if demo is None:
        if scenario is not None:
            parser.error("--scenario needs --demo PROFILE")
        return
    from hwtop.demo.machine import split_story
    from hwtop.demo.variants import listing, split

    if demo == "list":
        print("\n".join(listing()))
        sys.exit(0)
    real = [flag for flag, value in (("--pid", getattr(args, "pid", None)), ("--job", getattr(args, "job", None)),
                                     ("--workload", getattr(args, "workload", None))) if value]
    if real:
        parser.error(f"{', '.join(real)} watch this machine's processes; a --demo machine has its own job "
                     "(--scenario plays a story on it)")
    try:
        split(demo)  # PROFILE or PROFILE:VARIANT
        spec, story = split_story(demo, scenario)
    except KeyError as error:
        parser.error(str(error.args[0]))
    if story is not None:
        if ":" in spec:
            parser.error("--scenario plays on a plain profile, not on a driver variant such as " + spec)
        args.demo = f"{spec}:{story}"
    from hwtop.demo.nvml import coverage

    if (outside := coverage.note(coverage.installed())) is not None:  # every command a demo machine drives
        print(f"hwtop: {outside}", file=sys.stderr)
