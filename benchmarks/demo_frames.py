"""What a user sees, compared between two trees: every demo story (and a few driver variants) played on a
hand-moved clock through a Session, each tick's whole snapshot and findings written as JSON lines, and the lines
of one tree compared with another's. A change meant to cost less and show the same must compare equal.

    python -m benchmarks.demo_frames --tree BEFORE [--tree AFTER] [--ticks 60] [--step 1.3] [--only a,b]

Each tree runs in its own process (`PYTHONPATH=tree`). Left out of the comparison, and only these: each GPU's
PCIe rates (a driver without the byte-counter fields samples them for 20 ms on a background thread, and a busy
32-bit counter is polled between ticks on the wall clock, so two runs of the same tree differ there); `--self`
plays the first tree twice to show what else moves.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile

from benchmarks.terminal_runs import ROOT

PLAYS = (  # (spec, scenario): every story on the DGX, the big machine, and other cards' and drivers' paths
    *(("dgx-a100", story) for story in ("starved", "nccl-hang", "oom", "amp", "thermal", "straggler",
                                          "nccl-ethernet", "straggler-256")),
    ("dgx-a100", None), ("dgx-a100:mig-toggle", None), ("dgx-a100:nvlink-busy", None), ("dgx-a100:r470", None),
    ("dgx-a100:r550", None), ("dgx-a100:fan-unknown", None), ("dgx-a100:shared", None), ("h100-pcie", None),
    ("h200-vm", None), ("rtx3090", "starved"), ("ws-2x3090", None), ("gtx1660s", None), ("a4000", None),
)

PLAYER = r'''
import sys, msgspec
from hwtop.demo.machine import demo_sampler
from hwtop.session.session import Session
spec, scenario, ticks, step, out = sys.argv[1], sys.argv[2] or None, int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
now = [0.0]
sampler = demo_sampler(spec, scenario, seed=7, clock=lambda: now[0], wall=lambda: 1_800_000_000.0 + now[0])
session = Session(sampler)
with open(out, "w") as handle:
    for tick in range(ticks):
        frame = session.tick()
        now[0] += step
        handle.write(f"{tick} findings {msgspec.json.encode(frame.findings).decode()}\n")
        handle.write(f"{tick} errors {msgspec.json.encode(frame.rule_errors).decode()}\n")
        handle.write(f"{tick} timeline {msgspec.json.encode(frame.timeline).decode()}\n")
        handle.write(f"{tick} snapshot {msgspec.json.encode(frame.snapshot).decode()}\n")
session.close()
'''

# PCIe rates come from threads that run on the wall clock (the 20-ms throughput samples of drivers without the
# byte fields; the poller of a busy 32-bit counter between ticks): two runs of one tree differ there
_PCIE_RATES = re.compile(r'("pcie":\{[^{}]*?)"tx_bytes_per_s":[^,}]*,"rx_bytes_per_s":[^,}]*')


def play(tree: str, spec: str, scenario: str | None, ticks: int, step: float, out: str) -> list[str]:
    subprocess.run([sys.executable, "-c", PLAYER, spec, scenario or "", str(ticks), str(step), out], check=True,
                   cwd=tree, env={**os.environ, "PYTHONPATH": tree})
    with open(out) as handle:
        lines = handle.readlines()
    return [_PCIE_RATES.sub(r"\1", line) for line in lines]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", action="append", default=[], help="a checkout (twice: before, after); "
                        "one: against this checkout")
    parser.add_argument("--ticks", type=int, default=60)
    parser.add_argument("--step", type=float, default=1.3, help="story seconds between ticks")
    parser.add_argument("--only", default="", help="comma-separated specs or scenarios to play")
    parser.add_argument("--self", action="store_true", help="play the first tree against itself")
    args = parser.parse_args()
    trees = args.tree if len(args.tree) == 2 else [*args.tree[:1], ROOT]
    if args.self:
        trees = [trees[0], trees[0]]
    only = {name for name in args.only.split(",") if name}
    plays = [(spec, scenario) for spec, scenario in PLAYS if not only or spec in only or scenario in only]
    failed = 0
    with tempfile.TemporaryDirectory(prefix="bench-frames-") as work:
        for spec, scenario in plays:
            name = f"{spec} {scenario or ''}".strip()
            a, b = (play(tree, spec, scenario, args.ticks, args.step, os.path.join(work, f"{i}.jsonl"))
                    for i, tree in enumerate(trees))
            differing = [i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y]
            if len(a) != len(b):
                differing.append(min(len(a), len(b)))
            failed += bool(differing)
            where = ", ".join(" ".join(a[i].split(" ", 2)[:2]) for i in differing[:4] if i < len(a))
            print(f"{name:32} {len(a):5} lines  {'same' if not differing else f'{len(differing)} differ: {where}'}")
    print(f"{len(plays) - failed} of {len(plays)} plays the same ({args.ticks} ticks, {args.step:g} s apart)")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
