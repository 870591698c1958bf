"""`hwtop snapshot --json`: two samples --interval apart (rates need two), printed as one snapshot; or, with
--replay FILE --at T, the recorded snapshot at T."""

from __future__ import annotations

import argparse
import sys
import time

from hwtop.cli.machine import make_sampler
from hwtop.cli.options import Invocation, add_source_options, offset_seconds


def add_options(snap: argparse.ArgumentParser) -> None:
    snap.description = ("Take two samples --interval seconds apart (rates need two) and print one snapshot. Its "
                        "schema: docs/snapshot-schema.md.")
    snap.add_argument("--json", action="store_true", required=True, help="print the snapshot as JSON")
    snap.add_argument("--replay", metavar="FILE", help="take it from a recording instead of this machine")
    snap.add_argument("--at", type=offset_seconds, metavar="T",
                      help="with --replay: seconds from the recording's start (or a Unix time); default 0")
    add_source_options(snap, "seconds between the two samples (default 1)", sub=True)


def run(call: Invocation) -> int:
    args = call.args
    if args.replay is not None:
        from hwtop.cli.replay import snapshot_at_command

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
