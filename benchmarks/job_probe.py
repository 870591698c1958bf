"""The job probe's read, counted by callgrind, over a synthetic /proc: a torchrun job of 8 ranks (two threads each,
a dataset file open) with 4 DataLoader workers per rank and a resource tracker, beside 1,000 other processes.
Focused by pid (`--pid` on the launcher) and by pattern (`--job 'train\\.py'`, which scans every process's command
line at each rescan), the clock moved one second a read, so each file read on a schedule (PSS, NUMA, open files,
the pattern's rescan) comes as often as at a 1 s refresh.

    python -m benchmarks.job_probe [--reads N] [--tree DIR]...

Instructions per read (mean over the reads after a warm-up); `--tree` twice for an A/B in one sitting (the same
synthetic files for both)."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.callgrind_marks import MARKS_FILE, PREAMBLE, callgrind_command, sum_dumps
from benchmarks.terminal_runs import ROOT

HARNESS = PREAMBLE + r'''
from hwtop.probes.job import JobProbe

now = [100.0]

def measured(label, probe, warm=3):
    for _ in range(warm):
        now[0] += 1.0
        probe.read(now=now[0])
    mark("start")
    for _ in range({reads}):
        now[0] += 1.0
        probe.read(now=now[0])
    mark(label)

measured("pid", JobProbe(roots=(500,), root={root!r}, clock=lambda: now[0], host="bench", exclude=frozenset()))
measured("pattern", JobProbe(pattern=r"train\.py", root={root!r}, clock=lambda: now[0], host="bench",
                             exclude=frozenset()))
'''

PY = "/usr/bin/python3"
RANKS, WORKERS, OTHERS = 8, 4, 1000


def synthetic_job(root: Path) -> None:
    """The job and the other processes, written once with the tests' /proc writer."""
    sys.path.insert(0, ROOT)
    from tests.fakeproc import FakeProc, Proc, Thread

    proc = FakeProc(root)
    data = root / "shard-0.bin"
    data.write_bytes(b"x")
    proc.add(Proc(500, 1, "python3", (PY, "-m", "torch.distributed.run", "--nproc-per-node", str(RANKS), "train.py")))
    for rank in range(RANKS):
        pid = 510 + rank * 10
        env = {"RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": str(RANKS), "OMP_NUM_THREADS": "1",
               "NCCL_SOCKET_IFNAME": "eth0", "PATH": "/usr/bin"}
        proc.add(Proc(pid, 500, "python3", (PY, "-u", "train.py"), env=env, ticks=1000 + rank, fds=(str(data),),
                      threads=[Thread(pid, "python3", "R", 10**9, 10**8, 50), Thread(pid + 5000, "pt_autograd_0")]))
        for worker in range(WORKERS):
            proc.add(Proc(pid + 1 + worker, pid, "pt_data_worker", (PY, "-u", "train.py"), env=env,
                          fds=(str(data),)))
    proc.add(Proc(505, 510, "python3", (PY, "-c", "from multiprocessing.resource_tracker import main;main(5)")))
    for pid in range(2000, 2000 + OTHERS):
        proc.add(Proc(pid, 1, "python3" if pid % 3 else "bash", (PY, f"serve-{pid}.py")))
    proc.write()


def measure(tree: str, root: str, reads: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="bench-job-") as work:
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
    with tempfile.TemporaryDirectory(prefix="bench-job-root-") as root:
        synthetic_job(Path(root))
        results = [measure(tree, root, args.reads) for tree in trees]
    members = 1 + RANKS * (1 + WORKERS) + 1
    print(f"# the job probe's read, M instructions: callgrind, mean of {args.reads} reads after 3 "
          f"({members} processes in the job, {OTHERS} others)")
    print("| focus | " + " | ".join(trees) + " |")
    print("|---|" + "---|" * len(trees))
    for label, what in (("pid", "--pid (the launcher)"), ("pattern", "--job 'train\\.py' (a rescan each 5 s)")):
        print(f"| {what} | " + " | ".join(f"{result.get(label, 0.0) / 1e6:.2f}" for result in results) + " |")


if __name__ == "__main__":
    main()
