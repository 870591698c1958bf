"""The real probes at a DGX's size, counted by callgrind: what `--demo dgx-a100` does not run, since its host is
simulated. The process probe over a synthetic /proc of 2,100 sleeping processes (benchmarks/tick.py's
synthetic_proc: every CPU tick count stands still, as on a big box between jobs' steps), the CPU probe over a
256-core /proc/stat (psutil.PROCFS_PATH pointed at it), eight NUMA nodes' meminfo, and the network's sysfs
with eight InfiniBand ports (benchmarks/tick.py's synthetic_network; /proc/net/dev's counters handed in).

    python -m benchmarks.real_big_probes [--tree DIR]...

Instructions per read (a process read comes every other tick at a 1 s refresh); `--tree` twice for an A/B in
one sitting (the same synthetic files for both).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile

from benchmarks.callgrind_marks import MARKS_FILE, PREAMBLE, callgrind_command, sum_dumps
from benchmarks.terminal_runs import ROOT
from benchmarks.tick import synthetic_network, synthetic_proc

HARNESS = PREAMBLE + r'''
import psutil
from hwtop.probes.cpu import CpuProbe, CpuStaticInfo
from hwtop.probes.network import NetworkProbe
from hwtop.probes.numa import NumaProbe
from hwtop.probes.processes import ProcessProbe

now = [0.0]

def measured(label, read, warm=3, step=0.0):
    """`warm` reads, then {reads} marked as `label`; the probes' clock moved `step` seconds before each."""
    for _ in range(warm):
        now[0] += step
        read()
    mark("start")
    for _ in range({reads}):
        now[0] += step
        read()
    mark(label)

processes = ProcessProbe({root!r}, clock=lambda: now[0])
measured("processes", processes.read, warm=8, step=2.0)
psutil.PROCFS_PATH = {root!r} + "/proc"
import inspect  # trees before the CPU probe read under its root read psutil's PROCFS_PATH above
extra = {{"root": {root!r}}} if "root" in inspect.signature(CpuProbe).parameters else {{}}
cpu = CpuProbe(static=CpuStaticInfo(start=False), freq_source=lambda: [], **extra)
measured("cpu", lambda: cpu.read({{}}))
numa = NumaProbe({root!r})
measured("numa", lambda: numa.read(2 * 1024**4, 1024**4))
names = ["lo", "enp225s0f0", "enp225s0f1"] + [f"veth{{i:05x}}" for i in range(40)]
counted = [0]
def counters():
    counted[0] += 1
    return {{name: (counted[0] * 1000, counted[0] * 500) for name in names}}
network = NetworkProbe({root!r}, counters=counters, clock=lambda: now[0])
measured("nics", network.read, step=1.0)
'''

CPUS, NODES = 256, 8


def synthetic_machine(root: str) -> None:
    """2,100 processes, a 256-core /proc/stat, eight NUMA nodes of 32 cores with their meminfo, eight InfiniBand
    ports beside two Ethernet ports and 40 containers' veths (their byte counters handed to the probe)."""
    synthetic_proc(root, 2100)
    synthetic_network(root, 8, 40)
    draw = random.Random(1)
    lines = ["cpu  " + " ".join(str(draw.randint(1, 10**7)) for _ in range(10))]
    lines += [f"cpu{i} " + " ".join(str(draw.randint(1, 10**7)) for _ in range(10)) for i in range(CPUS)]
    with open(os.path.join(root, "proc", "stat"), "w") as handle:
        handle.write("\n".join([*lines, "intr 1 2 3", "ctxt 5", "btime 1", "processes 3"]) + "\n")
    keys = ("MemTotal", "MemFree", "MemUsed", "SwapCached", "Active", "Inactive", "Active(anon)", "Inactive(anon)",
            "Active(file)", "Inactive(file)", "Unevictable", "Mlocked", "Dirty", "Writeback", "FilePages", "Mapped",
            "AnonPages", "Shmem", "KernelStack", "PageTables", "KReclaimable", "Slab", "SReclaimable", "SUnreclaim")
    for node in range(NODES):
        base = os.path.join(root, "sys/devices/system/node", f"node{node}")
        os.makedirs(base)
        with open(os.path.join(base, "meminfo"), "w") as handle:
            handle.write("".join(f"Node {node} {key + ':':<16}{draw.randint(10**6, 10**8):>12} kB\n" for key in keys))
        with open(os.path.join(base, "cpulist"), "w") as handle:
            handle.write(f"{node * 32}-{node * 32 + 31}\n")
        with open(os.path.join(base, "distance"), "w") as handle:
            handle.write(" ".join("10" if other == node else "32" for other in range(NODES)) + "\n")


def measure(tree: str, root: str, reads: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="bench-realbig-") as work:
        script = os.path.join(work, "harness.py")
        with open(script, "w") as handle:
            handle.write(HARNESS.format(tree=tree, marks=MARKS_FILE, root=root, reads=reads))
        subprocess.run(callgrind_command(work, f"{work}/valgrind.log", [script]),
                       check=True, cwd=tree, env={**os.environ, "PYTHONPATH": tree})
        return {label: total / reads for label, total in sum_dumps(work).items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reads", type=int, default=20)
    parser.add_argument("--tree", action="append", default=[], help="a checkout (repeat for an A/B)")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("needs valgrind (apt-get install valgrind)")
    trees = args.tree or [ROOT]
    with tempfile.TemporaryDirectory(prefix="bench-realbig-root-") as root:
        synthetic_machine(root)
        results = [measure(tree, root, args.reads) for tree in trees]
    print(f"# the real probes at a DGX's size, M instructions per read: callgrind, mean of {args.reads} reads")
    print("| probe | " + " | ".join(trees) + " |")
    print("|---|" + "---|" * len(trees))
    for label, what in (("processes", "processes (2,100 sleeping)"), ("cpu", f"cpu ({CPUS} cores)"),
                        ("numa", f"numa ({NODES} nodes)"), ("nics", "nics (8 InfiniBand ports, 43 interfaces)")):
        print(f"| {what} | " + " | ".join(f"{result.get(label, 0.0) / 1e6:.2f}" for result in results) + " |")


if __name__ == "__main__":
    main()
