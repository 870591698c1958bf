"""The big machine's tick (issue 46: `--demo dgx-a100 --scenario straggler-256`, 256 CPUs, eight GPUs through the
real nvidia-ml-py over the fake NVML, 2,000 other processes, a 256-rank job) by part, counted by callgrind on a
hand-moved clock: one simulated second per tick, as a 1 s refresh sees it.

    python -m benchmarks.big_tick [--ticks 10] [--warmup 12] [--rules] [--fake] [--tree DIR]

Why beside tick_instructions.py: under valgrind a tick of the real app takes seconds of wall time, so whatever runs
on a clock (the GPU probe's five-second tier, the fake's once-a-second state, the process list's 1.9 s) runs more
often there than at a 1 s refresh; here the clock moves one second a tick whatever valgrind's speed. What it leaves
out is the app's side (the widgets' show, Textual's render): tick_instructions.py counts those. `--rules` splits
the advice by rule; `--fake` splits the GPU probe into the fake library's answers by symbol (each split adds the
marks' own cost, ~20 K instructions a mark, to the total). `--tree` measures another checkout (`git archive` of a
commit unpacked somewhere), for an A/B in one sitting.
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

HARNESS = PREAMBLE + r'''from hwtop.demo.machine import demo_sampler
from hwtop.session.session import Session
import hwtop.advice.engine as engine_module

now = [0.0]
sampler = demo_sampler("dgx-a100", "straggler-256", seed=7, clock=lambda: now[0],
                       wall=lambda: 1_800_000_000.0 + now[0])
session = Session(sampler)
''' + SESSION_MARKS + r'''
for name in ("host", "memory", "numa", "cpu", "disks", "nics", "processes"):
    wrap(sampler.host, name, "probe " + name)
wrap(sampler.gpu, "read", "probe gpu")
''' + ADVICE_MARKS + r'''if {fake}:
    from hwtop.demo.nvml.library import FakeNvmlLibrary
    dispatch = FakeNvmlLibrary._dispatch
    def marked_dispatch(self, symbol, implementation, args):
        at("probe gpu")
        try:
            return dispatch(self, symbol, implementation, args)
        finally:
            at("fake " + symbol)
    FakeNvmlLibrary._dispatch = marked_dispatch
for tick in range({warmup}):
    session.tick()
    now[0] += 1.0
    if tick == {warmup} - 1 and sampler.job is not None:
        wrap(sampler.job, "read", "probe job")
''' + MEASURED_TICKS + r'''session.close()
'''


def measure(tree: str, ticks: int, warmup: int, rules: bool, fake: bool) -> Counter[str]:
    """Instructions per tick by part."""
    with tempfile.TemporaryDirectory(prefix="bench-big-") as work:
        script = os.path.join(work, "harness.py")
        with open(script, "w") as handle:
            handle.write(HARNESS.format(tree=tree, marks=MARKS_FILE, ticks=ticks, warmup=warmup, rules=rules,
                                        fake=fake))
        subprocess.run(callgrind_command(work, f"{work}/valgrind.log", [script]),
                       check=True, cwd=tree, env={**os.environ, "PYTHONPATH": tree})
        parts = sum_dumps(work)
    return Counter({label: total // ticks for label, total in parts.items()})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ticks", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=12)
    parser.add_argument("--rules", action="store_true", help="the advice split by rule")
    parser.add_argument("--fake", action="store_true", help="the fake NVML's answers split by symbol")
    parser.add_argument("--tree", action="append", default=[], help="a checkout to measure (repeat for an A/B); "
                        "default this one")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("needs valgrind (apt-get install valgrind)")
    trees = args.tree or [ROOT]
    results = [measure(tree, args.ticks, args.warmup, args.rules, args.fake) for tree in trees]
    print(f"# big machine, M instructions per tick: callgrind, a hand-moved clock at 1 s a tick, mean of ticks "
          f"{args.warmup + 1}-{args.warmup + args.ticks}")
    print_parts(trees, results)


if __name__ == "__main__":
    main()
