"""`hwtop replay FILE`: the whole monitor driven by a recording; and the recording's reading that `snapshot
--replay` and `export --replay` share (a bad file refused in one line, before Textual is imported)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from hwtop.cli.options import Invocation, add_source_options, interval_seconds

if TYPE_CHECKING:
    from hwtop.recording.store import Recording


def add_options(replay: argparse.ArgumentParser) -> None:
    replay.description = ("The whole monitor, driven by FILE; the advice pane re-evaluates as it plays. Keys: p "
                          "pause, . , step, ] [ seek 10 s, + - speed.")
    replay.add_argument("file", metavar="FILE")
    replay.add_argument("--speed", type=interval_seconds, default=1.0, metavar="X",
                        help="playback speed (default 1: real time)")
    add_source_options(replay, "refresh interval of the playback (default: the recording's)", sub=True, refused=True)


def load_or_exit(path: str) -> Recording:
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


def run(call: Invocation) -> int:
    args = call.args
    recording = load_or_exit(args.file)  # before Textual is imported: a bad file is refused at once
    from hwtop.recording.replay import ReplaySource
    from hwtop.tui.app import HwtopApp

    interval = args.interval if "--interval" in call.argv else (recording.header.get("interval_s") or 1.0)
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
