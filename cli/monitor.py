"""`hwtop` with no command: the monitor. Its options are the top-level parser's; its start is the one users wait
for, so this module imports only what the first frame needs, and the other commands' modules never."""

from __future__ import annotations

import argparse
import os

from hwtop.cli.machine import open_sampler
from hwtop.cli.options import WORKLOAD_KINDS, Invocation, add_job_options, add_source_options, source_config
from hwtop.session.sources import JobRefused


def add_options(parser: argparse.ArgumentParser) -> None:
    add_source_options(parser, "refresh interval of the monitor (default 1)")
    parser.add_argument("--theme", choices=["dark", "light", "mono"], default=None,
                        help="colours: dark (default), light, mono (no colour; also when NO_COLOR is set)")
    parser.add_argument("--config", metavar="FILE", default=None,
                        help="config file (default ~/.config/hwtop/config.toml): [advice.thresholds] overrides")
    parser.add_argument("--workload", metavar="KIND", choices=WORKLOAD_KINDS,
                        help=f"start the embedded training job of this kind: {', '.join(WORKLOAD_KINDS)} (needs "
                             "torch; w in the monitor)")
    add_job_options(parser)
    parser.add_argument("--workload-device", choices=["cpu", "cuda"], default="cpu",
                        help="device of the --workload job (default cpu)")


def run(call: Invocation) -> int:
    args, config = call.args, call.config
    theme = args.theme or config.theme or ("mono" if os.environ.get("NO_COLOR") is not None else "dark")
    sources = source_config(args)  # a demo story about the ranks brings its own focused job
    try:
        sampler = open_sampler(sources)  # the job is closed with the sampler (its py-spy children)
    except JobRefused as refused:
        call.parser.error(str(refused))
    try:
        # The first sample is taken while Textual is still to be imported; the first tick, after it, before the
        # app runs. The first frame then shows CPU %, disk and process rates, drawn at once rather than after a
        # frame of empty panels and a tick on the worker thread.
        sampler.sample()
        from hwtop.tui.app import HwtopApp  # after the checks: a bad --pid or --job is refused at once
        workload_args = None
        if args.workload is not None:
            workload_args = ["--scenario", args.workload, "--device", args.workload_device, "--seconds", "600"]
        app = HwtopApp(sampler, interval=args.interval, workload_args=workload_args, exit_on_signals=True,
                       thresholds=config.thresholds, open_job=sources.job is not None, theme=theme, hide=config.hide)
        app.tick_before_run()
        app.run()
    except KeyboardInterrupt:
        pass
    finally:
        sampler.close()
    return 0
