"""Instructions from exec to the first full frame, hwtop against a bare Textual app, counted by valgrind
(cachegrind, no cache simulation) in a real terminal (a 200x50 tmux pane).

    python -m benchmarks.startup_instructions [--runs 3]

Why beside startup.py's wall time: on this 2-core VM the wall time of a start moves by ±15 % from one minute to the
next (page cache, neighbours). Within one sitting a count of instructions moves by ~1-7 %, enough to compare two
trees measured back to back. Between sittings hwtop's count can sit on two levels about 15 % apart for the same
code (1,442-1,551 M and 1,741-1,761 M seen on one evening; the cause is not found): compare trees in the same sitting,
never against an old figure. It is not time either (I/O and cache misses are not in it): the wall-time ratio stays
the figure users feel.

Each program runs until its first full frame is handed to the terminal and then exits at once: the bare app's
first frame; hwtop's first frame after the app first showed a snapshot. "Handed" (the default, `--until handed`)
is the main thread's call of the driver's `write` with the frame, which Textual's writer thread then writes to the
terminal. Counting to the writer thread's own write instead (`--until written`, the figure before 2026-12-06
07:50) also counted whatever the main thread did until that thread got the interpreter's lock: right after the
first frame Textual lays the screen out three more times for its start-up Resize events, and where the exit fell
among them moved hwtop's count by 20-90 M from one tree to the next (the "two levels" below). Needs valgrind and
tmux (apt-get install valgrind tmux). hwtop runs as this checkout's code.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

from benchmarks.startup import BARE_APP
from benchmarks.terminal_runs import ROOT, compile_checkout

FRAME_BYTES = 5000  # a write this large is a frame (a 200x50 frame is ~11-15 KB; set-up sequences are tiny)

RUN_UNTIL_FIRST_FRAME = """
import os, sys
state = {{"shown": {bare}}}
class Terminal:
    def __init__(self, stream): self._stream = stream
    def write(self, text):
        written = self._stream.write(text)
        if state["shown"] and len(text) > {frame_bytes}:
            self._stream.flush(); os._exit(0)
        return written
    def flush(self): return self._stream.flush()
    def __getattr__(self, name): return getattr(self._stream, name)
if {handed}:
    from textual.drivers.linux_driver import LinuxDriver  # hwtop's driver is a subclass: its write is this one
    hand = LinuxDriver.write
    def handed(self, data):
        if state["shown"] and len(data) > {frame_bytes}:
            os._exit(0)
        return hand(self, data)
    LinuxDriver.write = handed
else:
    sys.__stderr__ = Terminal(sys.__stderr__)  # where Textual's writer thread writes the screen
if {bare}:
    exec({bare_app!r})  # startup.py's bare app, the one its wall-time figure uses
else:
    import hwtop.tui.app as app_module
    show = app_module.HwtopApp.show
    def shown(self, frame):
        show(self, frame); state["shown"] = True
    app_module.HwtopApp.show = shown
    from hwtop.cli.main import main
    sys.exit(main([]))
"""


def instructions(bare: bool, timeout: float = 180.0, handed: bool = True) -> int:
    """valgrind's `I refs` for one start until the first full frame is handed to the terminal (or written)."""
    with tempfile.TemporaryDirectory() as work:
        script, log = os.path.join(work, "start.py"), os.path.join(work, "valgrind.log")
        with open(script, "w") as handle:
            handle.write(RUN_UNTIL_FIRST_FRAME.format(bare=bare, bare_app=BARE_APP, frame_bytes=FRAME_BYTES,
                                                     handed=handed))
        session = f"bench-{uuid.uuid4().hex[:8]}"
        command = ["env", f"PYTHONPATH={ROOT}", "valgrind", "--tool=cachegrind", "--cache-sim=no",
                   "--cachegrind-out-file=/dev/null", f"--log-file={log}", os.path.realpath(sys.executable), script]
        subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "200", "-y", "50", *command], check=True)
        try:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                found = re.search(r"I\s+refs:\s+([\d,]+)", _read(log))
                if found:
                    return int(found.group(1).replace(",", ""))
                time.sleep(0.5)
            raise TimeoutError(f"no count after {timeout:.0f} s: {_read(log)[-500:]}")
        finally:
            subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)


def _read(path: str) -> str:
    try:
        with open(path) as handle:
            return handle.read()
    except FileNotFoundError:
        return ""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--until", choices=["handed", "written"], default="handed",
                        help="the frame handed to the terminal's writer thread (default), or written by it")
    args = parser.parse_args()
    runs, handed = args.runs, args.until == "handed"
    missing = [tool for tool in ("valgrind", "tmux") if shutil.which(tool) is None]
    if missing:
        sys.exit(f"needs {' and '.join(missing)} (apt-get install {' '.join(missing)})")
    compile_checkout()
    bare = [instructions(bare=True, handed=handed) for _ in range(runs)]
    ours = [instructions(bare=False, handed=handed) for _ in range(runs)]
    b, o = statistics.median(bare), statistics.median(ours)
    print(f"# hwtop startup instructions — {time.strftime('%Y-%m-%d %H:%M')}, median of {runs} runs, valgrind "
          "cachegrind, 200x50 tmux pane, until the frame is " + args.until)
    print(f"# rerun: python -m benchmarks.startup_instructions --runs {runs} --until {args.until}")
    print("| what | instructions to the first full frame | spread |")
    print("|---|---|---|")
    print(f"| bare Textual app | {b / 1e6:,.0f} M | {min(bare) / 1e6:,.0f}-{max(bare) / 1e6:,.0f} M |")
    print(f"| hwtop | {o / 1e6:,.0f} M | {min(ours) / 1e6:,.0f}-{max(ours) / 1e6:,.0f} M |")
    print(f"| ratio hwtop / bare | {o / b:.2f}x | |")


if __name__ == "__main__":
    main()
