"""`hwtop record FILE`: one frame (snapshot and findings) per --interval, appended to FILE until stopped."""

from __future__ import annotations

import argparse
import signal
import sys
import time

from hwtop.cli.machine import make_sampler
from hwtop.cli.options import Invocation, add_source_options, interval_seconds


def add_options(record: argparse.ArgumentParser) -> None:
    record.description = ("Append one snapshot per --interval to FILE, after a header line, until ctrl-c, SIGTERM "
                          "or --seconds. Each line is flushed as it is written: a killed recorder loses at most its "
                          "last tick. hwtop replay FILE plays it.")
    record.add_argument("file", metavar="FILE")
    record.add_argument("--seconds", type=interval_seconds, metavar="S", help="stop after S seconds")
    add_source_options(record, "seconds between snapshots (default 1)", sub=True)


def run(call: Invocation) -> int:
    """Tick every --interval and write each frame (snapshot and findings) to FILE until stopped or --seconds
    pass. The file and its header exist before the first tick, so a ctrl-c at any moment leaves a readable
    recording (perhaps of no snapshots) and status 0."""
    from hwtop.cli.stop_signals import StopSignals
    from hwtop.recording.store import Recorder, RecordingError
    from hwtop.session.session import Session

    args, thresholds = call.args, call.config.thresholds
    with StopSignals() as stop:
        try:
            host = None
            if args.demo is not None:  # the header names the demo machine, not this one
                from hwtop.demo.machine import hostname_of

                host = hostname_of(args.demo)
            recorder = Recorder(args.file, args.interval, host=host)
        except RecordingError as error:
            print(f"hwtop: error: {error}", file=sys.stderr)
            return 2
        session: Session | None = None
        code = 0
        try:
            print(f"recording to {args.file} every {args.interval:g}s" +
                  (f" for {args.seconds:g}s" if args.seconds else " (ctrl-c stops)"), file=sys.stderr)
            session = Session(make_sampler(args.demo, args.no_gpu), thresholds)
            end = None if args.seconds is None else time.monotonic() + args.seconds
            while not stop.asked and (end is None or time.monotonic() < end):
                started = time.monotonic()
                recorder.write(session.tick())
                stop.wait(args.interval - (time.monotonic() - started))
        except RecordingError as error:
            print(f"hwtop: {error}", file=sys.stderr)
            code = 1
        finally:
            recorder.close(quiet=True)
            if session is not None:
                session.close()
    if stop.signum == signal.SIGINT:
        print(file=sys.stderr)  # past the terminal's ^C
    print(f"{recorder.count} snapshots in {args.file}", file=sys.stderr)
    return code
