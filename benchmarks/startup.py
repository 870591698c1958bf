"""Wall time from exec to the first full frame, in a real terminal (tmux), against a bare Textual app;
and the wall time of `hwtop snapshot --json`.

    python -m benchmarks.startup [--runs 5]

"First full frame" is the first pane capture in which every panel shows values (CPU percentages, memory
figures, the GPU line and process rows); the bare app's is the first capture showing its one Static.
Captures are polled every 10 ms, so figures carry up to ~10 ms of polling error on both sides.
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

from benchmarks.terminal_runs import HWTOP, ROOT, compile_checkout

BARE_APP = """
from textual.app import App
from textual.widgets import Static
class Bare(App):
    def compose(self):
        yield Static("BARE-READY")
Bare().run()
"""


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True).stdout


def first_frame(command: list[str], ready, size=(200, 50), timeout=30.0) -> float:
    """Each start gets a tmux server of its own (its own socket): with a shared one, a start could reach the server
    that the last kill-session was shutting down, and never appear (seen as a 30 s timeout)."""
    socket = f"bench-{uuid.uuid4().hex[:8]}"
    start = time.perf_counter()
    started = subprocess.run(["tmux", "-L", socket, "new-session", "-d", "-x", str(size[0]), "-y", str(size[1]),
                              *command], capture_output=True, text=True)
    if started.returncode != 0:
        raise RuntimeError(f"tmux could not start {command}: {started.stderr.strip()}")
    try:
        while time.perf_counter() - start < timeout:
            if ready(tmux("-L", socket, "capture-pane", "-p")):
                return time.perf_counter() - start
            time.sleep(0.01)
        raise TimeoutError(command)
    finally:
        tmux("-L", socket, "kill-server")


def paired_first_frames(starts: int) -> tuple[list[float], list[float]]:
    """(hwtop's, the bare app's) first frames, `starts` of each, taking turns: a drift of this VM over the minute
    (page cache, a neighbour) then touches both alike, as terminal_runs' rounds do for CPU. Measured one after
    the other, three bare starts then three of hwtop, the ratio moved by ±0.1 from one run to the next."""
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as handle:
        handle.write(BARE_APP)
    ours: list[float] = []
    bare: list[float] = []
    try:
        for turn in range(starts):  # who goes first alternates too: the second start finds a warmer cache
            pair = [lambda: bare.append(first_frame([sys.executable, handle.name], lambda p: "BARE-READY" in p)),
                    lambda: ours.append(first_frame(HWTOP, hwtop_ready))]
            for start in pair if turn % 2 == 0 else reversed(pair):
                start()
    finally:
        os.unlink(handle.name)
    return ours, bare


# Runs a program as `python -m` or a script would, noting (in a file) the wall clock at its first line and at the
# first write of a frame (over FRAME_BYTES, where Textual writes the screen): the in-process figure, and where the
# terminal method's time goes. Python's start (interpreter, site and its .pth files) comes before the first line.
TIMED_START = """
import os, runpy, sys, time
began = time.time()
note = os.environ.pop("HWTOP_BENCH_NOTE")
class Terminal:
    def __init__(self, stream): self._stream, self._done = stream, False
    def write(self, text):
        if not self._done and len(text) > {frame_bytes}:  # noted first: the pane may show it, and go, at once
            self._done = True
            with open(note, "w") as handle:
                handle.write(f"{{began}} {{time.time()}}")
        return self._stream.write(text)
    def __getattr__(self, name): return getattr(self._stream, name)
sys.__stderr__ = Terminal(sys.__stderr__)
target = sys.argv[1]
sys.argv = sys.argv[1:]
if target.endswith(".py"):
    runpy.run_path(target, run_name="__main__")
else:
    runpy.run_module(target, run_name="__main__", alter_sys=True)
"""
FRAME_BYTES = 5000  # a write this large is a frame (a 200x50 frame is ~11-15 KB; set-up sequences are tiny)


class Start:
    """One start seen from outside (launch → the frame visible in the pane) and from inside (the interpreter's first
    line, the frame's write), all on the wall clock."""

    def __init__(self, visible: float, python_up: float, written: float) -> None:
        self.visible, self.python_up, self.written = visible, python_up, written

    @property
    def in_process(self) -> float:
        """From the program's first line to its first frame written: what a timer inside the program reads."""
        return self.written - self.python_up


def timed_first_frame(target: list[str], ready, size=(200, 50)) -> Start:
    """`target`: a module and its arguments (`hwtop --interval 1`) or a script's path; run under TIMED_START."""
    with tempfile.TemporaryDirectory(prefix="bench-start-") as work:
        script, note = os.path.join(work, "timed.py"), os.path.join(work, "note")
        with open(script, "w") as handle:
            handle.write(TIMED_START.format(frame_bytes=FRAME_BYTES))
        launched = time.time()
        visible = first_frame(["env", f"PYTHONPATH={ROOT}", f"HWTOP_BENCH_NOTE={note}", sys.executable, script,
                               *target], ready, size)
        with open(note) as handle:
            began, written = (float(value) for value in handle.read().split())
    return Start(visible, began - launched, written - launched)


def paired_timed_starts(starts: int) -> tuple[list[Start], list[Start]]:
    """As paired_first_frames, each start also timed from inside (timed_first_frame)."""
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as handle:
        handle.write(BARE_APP)
    ours: list[Start] = []
    bare: list[Start] = []
    try:
        for turn in range(starts):
            pair = [lambda: bare.append(timed_first_frame([handle.name], lambda p: "BARE-READY" in p)),
                    lambda: ours.append(timed_first_frame(["hwtop"], hwtop_ready))]
            for start in pair if turn % 2 == 0 else reversed(pair):
                start()
    finally:
        os.unlink(handle.name)
    return ours, bare


def hwtop_ready(pane: str) -> bool:
    """Every panel with values: CPU load measured (needs two samples), memory, disks, GPU line, processes."""
    return (re.search(r"all\s+\d+%", pane) is not None and "RAM" in pane and "B/s" in pane
            and ("No GPU shown" in pane or "GPU0" in pane) and re.search(r"\n\S*\s*\d+\s+\w+\s+\d", pane) is not None)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    if shutil.which("tmux") is None:
        sys.exit("tmux is needed")
    compile_checkout()
    ours, bare = paired_first_frames(runs)
    snaps = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([*HWTOP, "snapshot", "--json"], capture_output=True, check=True)
        snaps.append(time.perf_counter() - start)
    b, o, s = statistics.median(bare), statistics.median(ours), statistics.median(snaps)
    print(f"# hwtop startup — {time.strftime('%Y-%m-%d')}, {os.cpu_count()} CPUs, median of {runs} runs "
          "(hwtop and the bare app taking turns)")
    print(f"# rerun: python -m benchmarks.startup --runs {runs}")
    print("| what | seconds |")
    print("|---|---|")
    print(f"| bare Textual app, first frame | {b:.3f} |")
    print(f"| hwtop, first full frame | {o:.3f} |")
    print(f"| ratio hwtop / bare | {o / b:.2f} |")
    print(f"| hwtop snapshot --json (includes its 1 s interval) | {s:.3f} |")


if __name__ == "__main__":
    main()
