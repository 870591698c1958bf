"""The machine a command reads: this one, or a --demo one (checked, its --scenario story folded in), built from
the command's SourceConfig the same way for the monitor, doctor and export."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from hwtop.session.sources import SourceConfig

if TYPE_CHECKING:
    from hwtop.session.sampler import Sampler


def open_sampler(config: SourceConfig) -> Sampler:
    """The sampler of `config`. Its job is checked first (JobRefused: its one line for the user), before a GPU
    library is loaded for nothing."""
    job = config.job.open() if config.job is not None else None
    from hwtop.session.sampler import Sampler

    if config.demo is not None:  # a whole simulated machine, which brings its own job: nothing of this host is read
        from hwtop.demo.machine import demo_sampler

        return demo_sampler(config.demo, gpu=config.gpu)
    if not config.gpu:
        return Sampler(gpu=None, job=job, nccl_ras=config.nccl_ras, workload_stacks=config.workload_stacks)
    from hwtop.probes.gpu import NvmlProbe

    probe = NvmlProbe()
    return Sampler(gpu=probe, topology_reader=probe.machine_topology, job=job, nccl_ras=config.nccl_ras,
                   workload_stacks=config.workload_stacks)


def make_sampler(demo: str | None, no_gpu: bool) -> Sampler:
    """This machine or a demo one, with no job focused (scripts and tests build a machine as a command does)."""
    return open_sampler(SourceConfig(demo=demo, gpu=not no_gpu))


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
