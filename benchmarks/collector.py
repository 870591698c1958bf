"""Issue 46: the garbage collector's share of an idle monitor. Two `hwtop --interval 1` side by side in 200x50 tmux
panes (same box, same window, so the same process churn): one as shipped, one with Python's own thresholds put
back after the first frame (700, 10, 10); each reports its collector passes and their CPU (thread time between
gc's start and stop callbacks) and its process CPU over the window after a warm-up.

    python -m benchmarks.collector [--seconds 120]
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import tempfile
import time
import uuid

from benchmarks.terminal_runs import ROOT, tmux

HARNESS = """
import atexit, collections, gc, os, sys, threading, time
sys.argv = ["hwtop", "--interval", "1"]
out, python_thresholds, warm = os.environ["OUT"], os.environ.get("PYTHON_THRESHOLDS"), float(os.environ["WARM"])
armed, spent, count, start, cpu0 = [None], collections.Counter(), collections.Counter(), [0.0], [0.0]
def callback(phase, info):
    if armed[0] is None:
        return
    if phase == "start":
        start[0] = time.thread_time()
    else:
        spent[info["generation"]] += time.thread_time() - start[0]
        count[info["generation"]] += 1
gc.callbacks.append(callback)
if python_thresholds:
    import hwtop.tui.guarded_app as guarded
    shipped = guarded.GuardedApp._after_first_frame
    def after(self):
        shipped(self)
        gc.set_threshold(700, 10, 10)
    guarded.GuardedApp._after_first_frame = after
def arm():
    time.sleep(warm)
    armed[0], cpu0[0] = time.monotonic(), time.process_time()
threading.Thread(target=arm, daemon=True).start()
def report():
    seconds = time.monotonic() - armed[0]
    with open(out, "w") as handle:
        passes = ", ".join(f"gen{g} {count[g]} passes {1000 * spent[g]:.1f} ms" for g in sorted(count)) or "none"
        handle.write(f"{seconds:.0f} s: process CPU {1000 * (time.process_time() - cpu0[0]) / seconds:.2f} ms/s, "
                     f"collector {1000 * sum(spent.values()) / seconds:.3f} ms/s ({passes})\\n")
atexit.register(report)
from hwtop.cli.entry import run
run()
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--warm", type=float, default=8.0)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="bench-collector-")
    script = os.path.join(work, "harness.py")
    with open(script, "x") as handle:
        handle.write(HARNESS)
    runs = {"shipped": "", "python's (700, 10, 10)": "1"}
    sessions = {name: f"bench-gc-{uuid.uuid4().hex[:8]}" for name in runs}
    print(f"# issue 46, the collector — {time.strftime('%Y-%m-%d %H:%M')}, load {os.getloadavg()[0]:.1f}")
    print(f"# rerun: python -m benchmarks.collector --seconds {args.seconds:g}\n", flush=True)
    try:
        for name, flag in runs.items():
            out = os.path.join(work, f"{sessions[name]}.txt")
            command = (f"cd {shlex.quote(ROOT)} && env PYTHONPATH={shlex.quote(ROOT)} OUT={out} WARM={args.warm} "
                       f"PYTHON_THRESHOLDS={flag} {shlex.quote(sys.executable)} {script}")
            tmux("new-session", "-d", "-s", sessions[name], "-x", "200", "-y", "50", command)
        time.sleep(args.warm + args.seconds)
        for session in sessions.values():
            tmux("send-keys", "-t", session, "q")
        deadline = time.monotonic() + 20
        files = {name: os.path.join(work, f"{sessions[name]}.txt") for name in runs}
        while time.monotonic() < deadline and not all(os.path.exists(path) for path in files.values()):
            time.sleep(0.2)
        for name, path in files.items():
            text = open(path).read().strip() if os.path.exists(path) else "no report (the app did not end)"
            print(f"- {name}: {text}")
        print(f"\nload at the end {os.getloadavg()[0]:.1f}")
    finally:
        for session in sessions.values():
            tmux("kill-session", "-t", session)


if __name__ == "__main__":
    main()
