"""This box's tick by part (issue 46's idle monitor: `hwtop --interval 1` on this machine), counted by callgrind:
the live sampler as the monitor makes it (cli/machine.py: NVML's probe, this host's /proc and /sys), a Session,
the advice; the clock the sampler stamps its snapshots with moved by hand, one second a tick, so the process list
is read every other tick as at a 1 s refresh whatever valgrind's speed.

    python -m benchmarks.idle_tick [--ticks 20] [--warmup 12] [--rules] [--tree DIR]...

What it leaves out is the app's side (show, Textual): tick_instructions.py counts those in a terminal. The box's
own processes are what the process probe reads, so compare trees in one run (`--tree` twice): they run at the
same time and read the same box; `--rules` splits the advice by rule (each split adds ~20 K instructions a mark).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter

from benchmarks.callgrind_marks import (
    ADVICE_MARKS,
    MARKS_FILE,
    MEASURED_TICKS,
    PREAMBLE,
    SESSION_MARKS,
    callgrind_command,
    print_parts,
    sum_dumps,
)
from benchmarks.terminal_runs import ROOT

HARNESS = PREAMBLE + r'''from hwtop.probes.gpu import NvmlProbe
from hwtop.session.sampler import Sampler
from hwtop.session.session import Session
import hwtop.advice.engine as engine_module

now = [1_800_000_000.0]
probe = NvmlProbe()
sampler = Sampler(gpu=probe, topology_reader=probe.machine_topology, clock=lambda: now[0])
session = Session(sampler)
''' + SESSION_MARKS + r'''
reads = {{"processes": 0}}
for name in ("host", "memory", "numa", "cpu", "disks", "nics", "processes"):
    wrap(sampler.host, name, "probe " + name)
wrap(sampler.gpu, "read", "probe gpu")
process_read = sampler.host.processes
def counted():
    if state["on"]:
        reads["processes"] += 1
    return process_read()
sampler.host.processes = counted
''' + ADVICE_MARKS + r'''for tick in range({warmup}):
    session.tick()
    now[0] += 1.0
''' + MEASURED_TICKS + r'''
print("processes", len(session.latest.snapshot.processes), "reads", reads["processes"], file=sys.stderr)
session.close()
'''


def measure(trees: list[str], ticks: int, warmup: int, rules: bool) -> list[tuple[Counter[str], str]]:
    """Instructions per tick by part, and what the harness said (rows and process reads), for each tree: the
    trees run at the same time, so that each reads the same box (its processes come and go)."""
    with tempfile.TemporaryDirectory(prefix="bench-idle-") as work:
        running = []
        for i, tree in enumerate(trees):
            script = os.path.join(work, f"harness{i}.py")
            with open(script, "w") as handle:
                handle.write(HARNESS.format(tree=tree, marks=MARKS_FILE, ticks=ticks, warmup=warmup, rules=rules))
            os.mkdir(os.path.join(work, str(i)))
            running.append(subprocess.Popen(
                callgrind_command(f"{work}/{i}", f"{work}/valgrind{i}.log", [script]),
                cwd=tree, env={**os.environ, "PYTHONPATH": tree}, stderr=subprocess.PIPE, text=True))
        results = []
        for i, process in enumerate(running):
            _, said = process.communicate()
            if process.returncode:
                sys.exit(f"{trees[i]}: the harness failed:\n{said}")
            parts = sum_dumps(f"{work}/{i}")
            results.append((Counter({label: total // ticks for label, total in parts.items()}), said.strip()))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ticks", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=12)
    parser.add_argument("--rules", action="store_true", help="the advice split by rule")
    parser.add_argument("--tree", action="append", default=[], help="a checkout to measure (repeat for an A/B); "
                        "default this one")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("needs valgrind (apt-get install valgrind)")
    trees = args.tree or [ROOT]
    measured = measure(trees, args.ticks, args.warmup, args.rules)
    results = [parts for parts, _ in measured]
    print(f"# this box, M instructions per tick: callgrind, the sampler's clock moved 1 s a tick, mean of ticks "
          f"{args.warmup + 1}-{args.warmup + args.ticks}")
    for tree, (_, said) in zip(trees, measured, strict=True):
        print(f"# {tree}: {said.splitlines()[-1] if said else ''}")
    print_parts(trees, results)


if __name__ == "__main__":
    main()
