"""What owners (Slurm job, pod, container: probes/owners.py) add to a tick over a synthetic /proc of N processes in
a mix of real cgroup layouts. Best of `--reads` runs (a loaded box's noise only ever adds time):

- the process probe with every process a row (limit N, the worst case: each row asks its owner) against the same
  probe with owners switched off: the first read (each owner read from /proc) and the reads after (cached);
- every process's owner asked of the cache alone (what the job finder's owner scan costs once warm);
- how many owners were read from /proc over all the reads (each process once).

    python -m benchmarks.owners [--count 5000] [--reads 15]

Instructions, steadier than time on a loaded box: make a tree once, then count a read under callgrind with and
without owners, after two warm-up reads and 0 or 4 more (the difference over 4 is one read):

    python -m benchmarks.owners --make-tree /tmp/owners-tree
    valgrind --tool=callgrind <python> -m benchmarks.owners --tree /tmp/owners-tree --owners on --extra 4
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable

from benchmarks.tick import synthetic_proc
from hwtop.probes.owners import OwnerReader
from hwtop.probes.processes import ProcessProbe

CID = "3f1c0d5e9a7b" + "0123456789abcdef" * 3 + "0a1b"
UID = "6b0a2f4e_1c3d_4e5f_8a9b_0c1d2e3f4a5b"
LAYOUTS = (
    "0::/system.slice/slurmstepd.scope/job_{n}/step_0/user/task_0\n",
    "11:memory:/slurm/uid_1000/job_{n}/step_0/task_0\n1:name=systemd:/system.slice/slurmd.service\n",
    f"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{UID}.slice/cri-containerd-{CID}.scope\n",
    f"0::/system.slice/docker-{CID}.scope\n",
    "0::/user.slice/user-1000.slice/session-3.scope\n",
)


def add_owners(root: str, count: int) -> None:
    for index, pid in enumerate(range(1000, 1000 + count)):
        base = os.path.join(root, "proc", str(pid))
        with open(os.path.join(base, "cgroup"), "w") as handle:
            handle.write(LAYOUTS[index % len(LAYOUTS)].format(n=4000 + index % 7))
        with open(os.path.join(base, "environ"), "wb") as handle:
            handle.write(b"PATH=/usr/bin\0HOME=/home/alice\0SLURM_JOB_ID=%d\0SLURM_JOB_NAME=train\0"
                         % (4000 + index % 7) + b"X=" + b"y" * 2000 + b"\0")


def best_ms(run: Callable[[], object], reads: int) -> float:
    best = float("inf")
    for _ in range(reads):
        start = time.perf_counter()
        run()
        best = min(best, (time.perf_counter() - start) * 1000)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=5000)
    parser.add_argument("--reads", type=int, default=15)
    parser.add_argument("--make-tree", metavar="DIR", help="write the synthetic /proc under DIR and exit")
    parser.add_argument("--tree", metavar="DIR", help="read DIR's tree: two warm-up reads and --extra more, no output")
    parser.add_argument("--owners", choices=("on", "off"), default="on")
    parser.add_argument("--extra", type=int, default=0)
    args = parser.parse_args()
    if args.make_tree:
        synthetic_proc(args.make_tree, args.count)
        add_owners(args.make_tree, args.count)
        return
    if args.tree:
        probe = ProcessProbe(args.tree, limit=args.count)
        if args.owners == "off":
            probe.owners.owner = lambda pid, start: None  # type: ignore[method-assign]
        for _ in range(2 + args.extra):
            probe.read()
        return
    with tempfile.TemporaryDirectory() as root:
        synthetic_proc(root, args.count)
        add_owners(root, args.count)
        with_owners = ProcessProbe(root, limit=args.count)
        start = time.perf_counter()
        with_owners.read()
        first = (time.perf_counter() - start) * 1000
        without = ProcessProbe(root, limit=args.count)
        without.owners.owner = lambda pid, start: None  # type: ignore[method-assign]
        without.read()
        on, off = float("inf"), float("inf")
        for _ in range(args.reads):  # alternated, so that the box's load falls on both alike
            on, off = min(on, best_ms(with_owners.read, 1)), min(off, best_ms(without.read, 1))
        reader = OwnerReader(os.path.join(root, "proc"))
        keys = [(pid, 100) for pid in range(1000, 1000 + args.count)]  # synthetic_proc's start time is 100
        start = time.perf_counter()
        for pid, begun in keys:
            reader.owner(pid, begun)
        cold = (time.perf_counter() - start) * 1000
        warm = best_ms(lambda: [reader.owner(pid, begun) for pid, begun in keys], args.reads)
        print(f"{args.count} processes, best of {args.reads}")
        print(f"  process probe, every process a row: first read with owners {first:.1f} ms; then "
              f"{on:.2f} ms with owners, {off:.2f} ms without: owners add {on - off:.2f} ms a read")
        print(f"  owners read from /proc over {args.reads + 1} reads: {with_owners.owners.reads} "
              f"(each process once)")
        print(f"  every owner from the cache: {warm:.2f} ms (first pass, read from /proc: {cold:.1f} ms)")


if __name__ == "__main__":
    main()
