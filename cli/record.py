"""`hwtop record FILE`, `hwtop replay FILE` and `hwtop snapshot --json --replay FILE --at T`."""

from __future__ import annotations

import argparse
import signal
import sys
import time

from hwtop.advice.thresholds import Thresholds


def _stop(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def record_command(args: argparse.Namespace, make_sampler, thresholds: Thresholds) -> int:  # noqa: ANN001
    """Tick every --interval and write each frame (snapshot and findings) to FILE until stopped or --seconds
    pass. The file and its header exist before the first tick, so a ctrl-c at any moment leaves a readable
    recording (perhaps of no snapshots) and status 0."""
    from hwtop.recording.store import Recorder, RecordingError
    from hwtop.session.session import Session

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _stop)
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
        while end is None or time.monotonic() < end:
            started = time.monotonic()
            recorder.write(session.tick())
            time.sleep(max(0.0, args.interval - (time.monotonic() - started)))
    except KeyboardInterrupt:
        pass
    except RecordingError as error:
        print(f"hwtop: {error}", file=sys.stderr)
        code = 1
    finally:
        recorder.close(quiet=True)
        if session is not None:
            session.close()
    print(f"{recorder.count} snapshots in {args.file}", file=sys.stderr)
    return code


def load_or_exit(path: str):  # -> Recording
    from hwtop.recording.store import RecordingError, load

    try:
        recording = load(path)
    except RecordingError as error:
        print(f"hwtop: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    if recording.truncated:
        print(f"hwtop: note: {path}: {recording.truncated}; replaying the {len(recording)} whole snapshots",
              file=sys.stderr)
    return recording


def replay_command(args: argparse.Namespace) -> int:
    recording = load_or_exit(args.file)  # before Textual is imported: a bad file is refused at once
    from hwtop.recording.replay import ReplaySource
    from hwtop.tui.app import HwtopApp

    interval = args.interval if args.interval_given else (recording.header.get("interval_s") or 1.0)
    source = ReplaySource(recording, interval_s=interval, speed=args.speed)
    try:
        HwtopApp(source, interval=interval, exit_on_signals=True).run()
    except KeyboardInterrupt:
        pass
    return 0


def snapshot_at_command(args: argparse.Namespace) -> int:
    """The snapshot at --at T: seconds from the recording's start, or a Unix time."""
    from hwtop.recording.store import RecordingError

    recording = load_or_exit(args.replay)
    when = args.at if args.at > 1e9 else recording.start + args.at
    index = recording.index_at(when)
    try:
        snapshot = recording.snapshot(index)
    except RecordingError as error:
        print(f"hwtop: error: {error}", file=sys.stderr)
        return 2
    print(snapshot.to_json(indent=2))
    return 0
