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

from benchmarks.terminal_runs import HWTOP, compile_checkout

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
