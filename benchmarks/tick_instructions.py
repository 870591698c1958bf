"""Where each tick's instructions go, counted by valgrind (callgrind) in the real app in a real terminal (a
200x50 tmux pane): the probes by kind, the sampler's own glue, the session, the advice, the app's show, and
Textual (its messages until the screen's refresh; the refresh: the compositor and the write to the terminal; then
its idle loop until the next tick, as `textual`); with the layout passes, the compositor's writes and the bytes
written per tick. Beside it the floor: a bare Textual app that
redraws one line a second, counted the same way.

    python -m benchmarks.tick_instructions [--ticks 6] [--warmup 10] [--only floor,idle,dgx,big] [--tree DIR]

Machines: `idle` is this box (`hwtop --interval 1`); `dgx` the demo `--demo dgx-a100 --scenario straggler`;
`big` the demo `--scenario straggler-256` (a 256-rank job, 2,000 other processes) with the job view open (j).
Why instructions: this box is shared, so wall time and CPU % move with the neighbours; a count of instructions
does not (it moves by ~1 % from run to run within a sitting; compare trees in one sitting, as
startup_instructions.py says). It is not time: cache misses and system calls' kernel side are not in it.

How: benchmarks/callgrind_marks.py makes callgrind dump its counts at marks placed around each part of a tick
(wrappers installed by the harness below, nothing in the product); the dumps are read and deleted as they come.
Under valgrind a tick takes a few seconds of wall time, so the process list (re-read at most every 1.9 s) is read
every tick here, where a 1 s refresh reads it every other tick; the table says how many reads it saw.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections import defaultdict

from benchmarks.callgrind_marks import MARKS_FILE, PREAMBLE, callgrind_command, read_dump
from benchmarks.terminal_runs import ROOT, compile_checkout

MACHINES = {
    "idle": ([], False),
    "dgx": (["--demo", "dgx-a100", "--scenario", "straggler"], False),
    "big": (["--demo", "dgx-a100", "--scenario", "straggler-256"], True),
}

HARNESS = PREAMBLE + r'''import json
WARMUP, TICKS, OUT, OPEN_JOB = {warmup}, {ticks}, {out!r}, {open_job}
state = {{"tick": 0}}
counts = {{}}  # tick -> {{layouts, displays, bytes}}

def at(label):
    mark(f"{{state['tick']}} {{label}}")

def count(name, amount=1):
    per = counts.setdefault(state["tick"], {{"layouts": 0, "displays": 0, "bytes": 0, "process reads": 0}})
    per[name] += amount

def finish():
    with open(OUT, "w") as handle:
        json.dump(counts, handle)
    os._exit(0)

from textual.screen import Screen
from textual.app import App
refresh_layout = Screen._refresh_layout
def counted_layout(self, *args, **kwargs):
    count("layouts")
    return refresh_layout(self, *args, **kwargs)
Screen._refresh_layout = counted_layout
display = App._display
def counted_display(self, screen, renderable):
    if renderable is not None:
        count("displays")
    return display(self, screen, renderable)
App._display = counted_display
compositor_refresh = Screen._compositor_refresh
def marked_refresh(self, *args, **kwargs):
    at("textual until the refresh")  # since the show: messages, idle handlers, a layout's own work
    try:
        return compositor_refresh(self, *args, **kwargs)
    finally:
        at("refresh")  # the compositor's update of the screen and its write to the terminal
Screen._compositor_refresh = marked_refresh

def count_bytes(driver_class):
    write = driver_class.write
    def counted_write(self, data):
        count("bytes", len(data.encode("utf-8", "replace")))
        return write(self, data)
    driver_class.write = counted_write
'''

HWTOP_HARNESS = HARNESS + r'''
from hwtop.tui.quiet_driver import QuietLinuxDriver
count_bytes(QuietLinuxDriver)
import hwtop.session.sampler as sampler_module
import hwtop.session.session as session_module
import hwtop.advice.engine as engine_module
import hwtop.tui.app as app_module

def probe(owner, name, label):
    method = getattr(owner, name)
    def wrapped(*args, **kwargs):
        at("sampler")
        try:
            return method(*args, **kwargs)
        finally:
            if label == "processes":
                count("process reads")
            at("probe " + label)
    setattr(owner, name, wrapped)

sample = sampler_module.Sampler._sample
def marked_sample(self):
    if state["tick"] == WARMUP + TICKS:
        at("textual")
        finish()
    state["tick"] += 1
    at("textual")  # since the last show: Textual's layout, render, write and idle loop (and, once, the start)
    if not getattr(self, "_bench_wrapped", False):
        self._bench_wrapped = True
        for name in ("host", "memory", "numa", "cpu", "disks", "nics", "processes"):
            probe(self.host, name, name)
        if self.gpu is not None:
            probe(self.gpu, "read", "gpu")
        if self.job is not None:
            probe(self.job, "read", "job")
        if self.workload is not None:
            probe(self.workload, "state", "workload")
    try:
        return sample(self)
    finally:
        at("sampler")
sampler_module.Sampler._sample = marked_sample

update = engine_module.AdviceEngine.update
def marked_update(self, snapshot, *args, **kwargs):
    at("session")
    try:
        return update(self, snapshot, *args, **kwargs)
    finally:
        at("advice")
engine_module.AdviceEngine.update = marked_update

advance = session_module.Session.advance
def marked_advance(self, move, *args, **kwargs):  # advise=False on the first frame (be7173c)
    try:
        return advance(self, move, *args, **kwargs)
    finally:
        at("session")
session_module.Session.advance = marked_advance

show = app_module.HwtopApp.show
def marked_show(self, frame):
    at("handoff")  # the worker thread's return to the event loop
    show(self, frame)
    if OPEN_JOB and state["tick"] == 2:
        self.action_job()
    at("show")
app_module.HwtopApp.show = marked_show

from hwtop.cli.main import main
sys.exit(main({argv!r}))
'''

FLOOR_HARNESS = HARNESS + r'''
from textual.drivers.linux_driver import LinuxDriver
count_bytes(LinuxDriver)
from textual.widgets import Static

class Floor(App):
    """A bare Textual app that redraws one line a second: the floor under any Textual monitor."""
    def compose(self):
        yield Static("FLOOR 0", id="line")
    def on_mount(self):
        self.set_interval(1.0, self.tick)
    def tick(self):
        if state["tick"] == WARMUP + TICKS:
            at("textual")
            finish()
        state["tick"] += 1
        at("textual")
        self.query_one("#line", Static).update(f"FLOOR {{state['tick']}}")
        at("show")
Floor().run()
'''


def run(harness: str, label: str, timeout: float, tree: str = ROOT) -> tuple[dict[str, list[int]],
                                                                          dict[str, dict[str, int]]]:
    """(segment -> instructions per measured tick, tick -> counters) for one harness under callgrind."""
    with tempfile.TemporaryDirectory(prefix="bench-cg-") as work:
        script, out = os.path.join(work, "harness.py"), os.path.join(work, "counts.json")
        with open(script, "w") as handle:
            handle.write(harness.replace("__OUT__", out))
        dumps = os.path.join(work, "dumps")
        os.mkdir(dumps)
        command = ["env", f"PYTHONPATH={tree}", *callgrind_command(dumps, f"{work}/valgrind.log", [script])]
        session = f"bench-{uuid.uuid4().hex[:8]}"
        subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "200", "-y", "50", *command], check=True)
        segments: dict[str, list[int]] = defaultdict(list)
        try:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                _collect(dumps, segments)
                if os.path.exists(out) and os.path.getsize(out) > 0:
                    time.sleep(1.0)
                    _collect(dumps, segments)
                    with open(out) as handle:
                        return dict(segments), json.load(handle)
                time.sleep(0.5)
            raise TimeoutError(f"{label}: no result after {timeout:.0f} s")
        finally:
            subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)


def _collect(folder: str, segments: dict[str, list[int]]) -> None:
    for name in os.listdir(folder):
        path = os.path.join(folder, name)
        got = read_dump(path)
        if got is None:
            continue
        os.unlink(path)
        label, total = got
        found = re.match(r"(\d+) (.+)", label)
        if found:
            segments[f"{found.group(1)}|{found.group(2)}"].append(total)


def per_tick(segments: dict[str, list[int]], counts: dict[str, dict[str, int]], warmup: int,
             ticks: int) -> tuple[dict[str, float], dict[str, float]]:
    """Mean instructions per measured tick by part (ticks warmup+1 .. warmup+ticks; a tick's `textual` is the
    one that ends at the next tick's start, so it is counted from the tick after), and mean counters."""
    parts: dict[str, float] = defaultdict(float)
    for key, totals in segments.items():
        tick, label = key.split("|", 1)
        number = int(tick)
        if label == "textual":
            number -= 1  # the Textual work that followed tick number-1's show
        if warmup < number <= warmup + ticks:
            parts[label] += sum(totals) / ticks
    counters: dict[str, float] = defaultdict(float)
    for tick, values in counts.items():
        if warmup < int(tick) <= warmup + ticks:
            for name, value in values.items():
                counters[name] += value / ticks
    return dict(parts), dict(counters)


ORDER = ("probe host", "probe memory", "probe numa", "probe cpu", "probe disks", "probe nics", "probe processes",
         "probe gpu", "probe job", "probe workload", "sampler", "session", "advice", "handoff", "show",
         "textual until the refresh", "refresh", "textual")


def harness_for(machine: str, warmup: int, ticks: int, tree: str = ROOT) -> str:
    common = {"tree": tree, "marks": MARKS_FILE, "warmup": warmup, "ticks": ticks, "out": "__OUT__"}
    if machine == "floor":
        return FLOOR_HARNESS.format(open_job=False, **common)
    argv, open_job = MACHINES[machine]
    return HWTOP_HARNESS.format(open_job=open_job, argv=["--interval", "1", *argv], **common)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ticks", type=int, default=6)
    parser.add_argument("--warmup", type=int, default=10, help="ticks left out: the start and its full repaints")
    parser.add_argument("--only", default="floor,idle,dgx,big", help="comma-separated: floor, idle, dgx, big")
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--tree", default=ROOT, help="the checkout whose hwtop is measured (`git archive` of a "
                        "commit unpacked somewhere, for an A/B); default this one")
    args = parser.parse_args()
    missing = [tool for tool in ("valgrind", "tmux") if shutil.which(tool) is None]
    if missing:
        sys.exit(f"needs {' and '.join(missing)} (apt-get install {' '.join(missing)})")
    compile_checkout()
    if args.tree != ROOT:
        import compileall

        compileall.compile_dir(args.tree, quiet=1)
    machines = [name for name in args.only.split(",") if name]
    results = {}
    for machine in machines:
        segments, counts = run(harness_for(machine, args.warmup, args.ticks, args.tree), machine, args.timeout,
                               args.tree)
        results[machine] = per_tick(segments, counts, args.warmup, args.ticks)
    print(f"# instructions per tick — {time.strftime('%Y-%m-%d %H:%M')}, callgrind, 200x50 tmux pane, 1 s refresh, "
          f"mean of ticks {args.warmup + 1}-{args.warmup + args.ticks}")
    print(f"# rerun: python -m benchmarks.tick_instructions --ticks {args.ticks} --warmup {args.warmup} "
          f"--only {args.only}" + (f" --tree {args.tree}" if args.tree != ROOT else ""))
    print("| part (M instructions per tick) | " + " | ".join(machines) + " |")
    print("|---|" + "---|" * len(machines))
    labels = [label for label in ORDER if any(label in results[m][0] for m in machines)]
    for label in labels:
        print(f"| {label} | " + " | ".join(f"{results[m][0].get(label, 0.0) / 1e6:.2f}" for m in machines) + " |")
    totals = {m: sum(results[m][0].values()) for m in machines}
    print("| **total** | " + " | ".join(f"**{totals[m] / 1e6:.2f}**" for m in machines) + " |")
    for name in ("layouts", "displays", "bytes", "process reads"):
        print(f"| {name} per tick | " + " | ".join(f"{results[m][1].get(name, 0.0):,.1f}" for m in machines) + " |")
    if "floor" in totals and totals["floor"]:
        for machine in machines:
            if machine != "floor":
                print(f"\n{machine} / floor: {totals[machine] / totals['floor']:.2f}x", end="")
    if "idle" in totals and "big" in totals and totals["idle"]:
        print(f"\nbig / idle: {totals['big'] / totals['idle']:.2f}x", end="")
    if "idle" in totals and "dgx" in totals and totals["idle"]:
        print(f"\ndgx / idle: {totals['dgx'] / totals['idle']:.2f}x", end="")
    print()


if __name__ == "__main__":
    main()
